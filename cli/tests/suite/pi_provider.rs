//! `toolstream pi-provider` and the pi extension (`integrations/pi`), checked two ways:
//! - the protocol itself, driving the binary as the extension does: one message per call (the
//!   provider pauses after each `tool_results` until every call is answered), exactly one
//!   terminal line per message, `cursor-replay-*` ids, the recorded results, the same messages as
//!   the pi session sink; `abort`, end of input, failures (as `error` messages), and the
//!   `cursor-agent` source with a stand-in `cursor-agent` script;
//! - real pi (each of `scripts/pi-versions`, installed by `scripts/install-pi`), offline, with a temporary agent dir
//!   and home: `pi --no-extensions -e integrations/pi --provider cursor` on recorded runs, in
//!   print mode (`--mode json -p …`) and in long-lived RPC pi's that replay one recording per new
//!   session (pi's own events and the session file pi writes hold the run's messages, one tool
//!   execution per replayed call with its recorded result, the final stop reason), a
//!   recorded `touch`/`rm`/edit/write that leaves the file system untouched, and an abort in RPC
//!   mode that ends with `aborted` and leaves no toolstream process behind.
//!
//! Without pi the real-pi tests print a note and pass, unless TOOLSTREAM_REQUIRE_PI is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::pi::{print_json, PiRun, Rpc};
use crate::common::wait_or_kill;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Longest wait for the provider's next line.
const LINE_TIMEOUT: Duration = Duration::from_secs(15);
/// pi processes run at once.
const WORKERS: usize = 4;

fn toolstream_bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolstream")
}

fn extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../integrations/pi").canonicalize().unwrap()
}

// ------------------------------------------------------------------------------------------------
// The provider, driven directly
// ------------------------------------------------------------------------------------------------

/// A running `toolstream pi-provider`.
struct Provider {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Its stderr, once it exited.
    said: String,
}

impl Provider {
    fn start(envs: &[(&str, &str)]) -> Provider {
        Provider::start_with(&[], envs)
    }

    /// `toolstream pi-provider ARGS…` with `envs`.
    fn start_with(args: &[&str], envs: &[(&str, &str)]) -> Provider {
        let mut cmd = Command::new(toolstream_bin());
        cmd.arg("pi-provider")
            .args(args)
            .env_remove("TOOLSTREAM_REPLAY_REALTIME")
            .env_remove("CURSOR_API_KEY")
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                if tx.send(String::from_utf8(line).unwrap()).is_err() {
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
        Provider { stdin: child.stdin.take(), child, lines, stderr: Some(stderr), said: String::new() }
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line; panics when none comes in time.
    fn next(&self) -> Value {
        match self.lines.recv_timeout(LINE_TIMEOUT) {
            Ok(l) => serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")),
            Err(e) => panic!("no line from pi-provider: {e:?}"),
        }
    }

    /// Whether stdout stays silent (still open) for `d`.
    fn quiet_for(&self, d: Duration) -> bool {
        matches!(self.lines.recv_timeout(d), Err(RecvTimeoutError::Timeout))
    }

    /// Whether stdout ended (no line before its end).
    fn at_end(&self) -> bool {
        matches!(self.lines.recv_timeout(LINE_TIMEOUT), Err(RecvTimeoutError::Disconnected))
    }

    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Exit status within `timeout` (killing it otherwise, and failing).
    fn wait(&mut self, timeout: Duration) -> i32 {
        let code = wait_or_kill(&mut self.child, timeout);
        self.said = self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        match code {
            Some(c) => c.unwrap_or(-1),
            None => panic!("pi-provider did not exit in {timeout:?}; stderr: {}", self.said),
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(source: Value, prompt: &str, cwd: &Path) -> Value {
    json!({
        "type": "request",
        "model": "auto",
        "cwd": cwd,
        "context": {
            "systemPrompt": "You are pi.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": 1}],
            "tools": [{"name": "bash", "description": "run", "parameters": {"type": "object"}}],
        },
        "source": source,
    })
}

fn replay_source(path: &Path) -> Value {
    json!({"kind": "replay", "path": path})
}

/// What one run delivered.
struct Delivered {
    lines: Vec<Value>,
    /// Terminal messages and tool results, in order.
    messages: Vec<Value>,
    code: i32,
}

/// Answer every `tool_results` as pi does (with the recorded results) until the run's last
/// message; with `check_pause`, also check that nothing comes before the answers.
fn drive(p: &mut Provider, check_pause: bool) -> Delivered {
    let mut lines = Vec::new();
    let mut messages = Vec::new();
    loop {
        let l = p.next();
        lines.push(l.clone());
        match l["type"].as_str().unwrap() {
            "done" => {
                messages.push(l["message"].clone());
                if l["reason"] != "toolUse" {
                    break;
                }
            }
            "error" => {
                messages.push(l["error"].clone());
                break;
            }
            "tool_results" => {
                let results = l["results"].as_array().unwrap().clone();
                if check_pause {
                    assert!(p.quiet_for(Duration::from_millis(300)), "the provider went on before pi's results");
                }
                // Answer in reverse order: order does not matter, only that every call is answered.
                for r in results.iter().rev() {
                    let mut answer = r.clone();
                    answer["type"] = "tool_result".into();
                    p.send(&answer);
                }
                messages.extend(results);
            }
            _ => {}
        }
    }
    assert!(p.at_end(), "lines after the last message");
    let code = p.wait(Duration::from_secs(10));
    Delivered { lines, messages, code }
}

/// The protocol's shape: every message has one start and exactly one terminal line, block events
/// only inside messages, `tool_results` right after a `toolUse` message, answering each of its
/// tool calls in order; replay ids only.
fn check_protocol(lines: &[Value]) -> Result<(), String> {
    let mut open: Option<Vec<String>> = None;
    let mut expect_results: Option<Vec<String>> = None;
    let mut started = false;
    let mut chats = 0;
    for l in lines {
        let t = l["type"].as_str().ok_or("line without type")?;
        if t == "chat" {
            chats += 1;
            if chats > 1 || started || l["chatId"].as_str().unwrap_or("").is_empty() {
                return Err(format!("a chat line must come once, before the first message, with its id: {l}"));
            }
            continue;
        }
        started |= t == "start";
        if let Some(ids) = expect_results.take() {
            if t != "tool_results" {
                return Err(format!("{t} after a toolUse message instead of its tool_results"));
            }
            let got: Vec<String> =
                l["results"].as_array().unwrap().iter().map(|r| r["toolCallId"].as_str().unwrap().to_owned()).collect();
            if got != ids {
                return Err(format!("tool_results {got:?} do not answer the calls {ids:?}"));
            }
            continue;
        }
        match (t, open.as_mut()) {
            ("start", None) => open = Some(Vec::new()),
            ("start", Some(_)) => return Err("start inside a message".into()),
            ("tool_results", _) => return Err("tool_results without a toolUse message".into()),
            ("toolcall_end", Some(ids)) => {
                let id = l["toolCall"]["id"].as_str().unwrap().to_owned();
                if !id.starts_with("cursor-replay-") {
                    return Err(format!("tool call id {id} is not a replay id"));
                }
                ids.push(id);
            }
            ("done" | "error", Some(ids)) => {
                let m = if t == "done" { &l["message"] } else { &l["error"] };
                if m["stopReason"] != l["reason"] {
                    return Err(format!("reason {} but stopReason {}", l["reason"], m["stopReason"]));
                }
                let calls: Vec<String> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| b["id"].as_str().unwrap().to_owned())
                    .collect();
                if &calls != ids {
                    return Err("terminal message's tool calls differ from the streamed ones".into());
                }
                if l["reason"] == "toolUse" {
                    expect_results = Some(calls);
                } else if !calls.is_empty() {
                    return Err("tool calls in a message that does not end with toolUse".into());
                }
                open = None;
            }
            (_, None) => return Err(format!("{t} outside a message")),
            (_, Some(_)) => {}
        }
    }
    if open.is_some() || expect_results.is_some() {
        return Err("the stream ended inside a message".into());
    }
    Ok(())
}

/// The messages (assistant and tool results) the pi session sink writes for `capture`.
/// The provider's messages as a session file has them: the provider's carry the model id the
/// request named (`auto`) and Cursor's name for it in `responseModel`; a session file, Cursor's name.
fn cursor_names(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(o) = m.as_object_mut() {
                if let Some(name) = o.remove("responseModel") {
                    o.insert("model".into(), name);
                }
            }
            m
        })
        .collect()
}

fn session_messages(capture: &Path) -> Vec<Value> {
    let dir = common::tempdir();
    let session = dir.join("s.jsonl");
    let run = common::toolstream(
        &["replay", "--sink", &format!("pi-session={}", session.display()), capture.to_str().unwrap()],
        None,
    );
    assert!(run.code == 0 || run.code == 1, "{}: {}", capture.display(), run.stderr);
    let text = std::fs::read_to_string(&session).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message" && e["message"]["role"] != "user")
        .map(|e| e["message"].clone())
        .collect()
}

#[test]
fn each_call_gets_one_message_and_the_recorded_results() {
    for capture in common::captures_and_examples() {
        let dir = common::tempdir();
        let mut p = Provider::start(&[]);
        p.send(&request(replay_source(&capture), "go", &dir));
        let d = drive(&mut p, capture.ends_with("demo.jsonl"));
        check_protocol(&d.lines).unwrap_or_else(|e| panic!("{}: {e}", capture.display()));
        assert_eq!(
            cursor_names(&d.messages),
            session_messages(&capture),
            "{}: provider vs session sink",
            capture.display()
        );
        let last = d.messages.last().unwrap();
        let expected_code = if last["stopReason"] == "stop" { 0 } else { 1 };
        assert_eq!(d.code, expected_code, "{}", capture.display());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The `chat` lines of a delivered run, and where the first one stands.
fn chat_lines(lines: &[Value]) -> (Vec<&str>, Option<usize>) {
    let chats = lines.iter().filter(|l| l["type"] == "chat").map(|l| l["chatId"].as_str().unwrap()).collect();
    (chats, lines.iter().position(|l| l["type"] == "chat"))
}

#[test]
fn the_chat_id_is_the_first_line_once_per_run() {
    let dir = common::tempdir();
    // stream-json: `system/init`'s `session_id`; an SDK recording: its `start.session_id`.
    for (example, id) in [
        ("demo.jsonl", "5f1c2a9e-7b3d-4e21-9c8a-2d6f0e4b1a77"),
        ("sdk-demo.jsonl", "b7d2e0c4-5a61-4f3e-9d08-6c1f2a9e3b55"),
    ] {
        let mut p = Provider::start(&[]);
        p.send(&request(replay_source(&common::example(example)), "go", &dir));
        let d = drive(&mut p, false);
        check_protocol(&d.lines).unwrap();
        assert_eq!(chat_lines(&d.lines), (vec![id], Some(0)), "{example}");
        assert_eq!(d.lines[0], json!({"type": "chat", "chatId": id}), "{example}");
    }
    // An SDK recording whose start names no session: no chat id to give.
    let sdk = std::fs::read_to_string(common::example("sdk-demo.jsonl")).unwrap();
    let anonymous = dir.join("anonymous.jsonl");
    std::fs::write(&anonymous, sdk.replacen(r#""session_id":"b7d2e0c4-5a61-4f3e-9d08-6c1f2a9e3b55","#, "", 1)).unwrap();
    let mut p = Provider::start(&[]);
    p.send(&request(replay_source(&anonymous), "go", &dir));
    let d = drive(&mut p, false);
    check_protocol(&d.lines).unwrap();
    assert!(d.messages.len() > 1, "the run was delivered");
    assert_eq!(chat_lines(&d.lines), (vec![], None));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_run_has_its_calls_and_ends_with_stop() {
    let dir = common::tempdir();
    let mut p = Provider::start(&[]);
    p.send(&request(replay_source(&common::example("demo.jsonl")), "go", &dir));
    let d = drive(&mut p, false);
    let calls: Vec<&Value> = d.messages.iter().filter(|m| m["role"] == "toolResult").collect();
    let names: Vec<&str> = calls.iter().map(|m| m["toolName"].as_str().unwrap()).collect();
    assert_eq!(names, ["find", "grep", "read", "cursor", "bash", "cursor", "cursor"]);
    // The failing test run is an error card; the grep result is what Cursor recorded.
    assert_eq!(calls[4]["isError"], true);
    assert!(calls[1]["content"][0]["text"].as_str().unwrap().contains("Math.round(cents * rate)"));
    assert_eq!(d.messages.last().unwrap()["stopReason"], "stop");
    assert_eq!(d.code, 0);
}

/// A CLI stream-json run: text at once, then (60 s later by its timestamps) more text.
fn slow_recording(dir: &Path) -> PathBuf {
    let s = "slow-1";
    let lines = [
        json!({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": dir, "session_id": s, "model": "Auto", "permissionMode": "default"}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "wait"}]}, "session_id": s}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Working"}]}, "session_id": s, "timestamp_ms": 1_000}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": " on it."}]}, "session_id": s, "timestamp_ms": 61_000}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Working on it.", "session_id": s, "timestamp_ms": 61_100}),
    ];
    let path = dir.join("slow.jsonl");
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

#[test]
fn abort_ends_the_open_message_as_aborted_and_exits() {
    let dir = common::tempdir();
    let mut p = Provider::start(&[]);
    p.send(&request(json!({"kind": "replay", "path": slow_recording(&dir), "realtime": true}), "wait", &dir));
    loop {
        if p.next()["type"] == "text_delta" {
            break;
        }
    }
    let asked = Instant::now();
    p.send(&json!({"type": "abort"}));
    let l = p.next();
    assert_eq!((l["type"].as_str(), l["reason"].as_str()), (Some("error"), Some("aborted")), "{l}");
    assert_eq!(l["error"]["stopReason"], "aborted");
    assert_eq!(l["error"]["content"], json!([{"type": "text", "text": "Working"}]));
    assert!(p.at_end());
    assert_eq!(p.wait(Duration::from_secs(5)), 130);
    assert!(asked.elapsed() < Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_end_of_input_stops_a_paused_run() {
    let dir = common::tempdir();
    let mut p = Provider::start(&[]);
    p.send(&request(replay_source(&common::example("demo.jsonl")), "go", &dir));
    while p.next()["type"] != "tool_results" {}
    p.close_stdin();
    // Paused between messages: nothing more is written.
    assert!(p.at_end());
    assert_eq!(p.wait(Duration::from_secs(5)), 130);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Exactly `start` then `error{reason:"error"}`; returns the error message.
fn failed_message(p: &Provider) -> String {
    let start = p.next();
    assert_eq!(start["type"], "start", "{start}");
    let err = p.next();
    assert_eq!((err["type"].as_str(), err["reason"].as_str()), (Some("error"), Some("error")), "{err}");
    assert_eq!(err["error"]["stopReason"], "error");
    assert!(p.at_end());
    err["error"]["errorMessage"].as_str().unwrap().to_owned()
}

#[test]
fn failures_are_error_messages() {
    let dir = common::tempdir();
    // A recording that is not there.
    let mut p = Provider::start(&[]);
    p.send(&request(replay_source(&dir.join("missing.jsonl")), "go", &dir));
    assert!(failed_message(&p).contains("cannot read the recording"));
    assert_eq!(p.wait(Duration::from_secs(5)), 1);
    // A recording without a run.
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let mut p = Provider::start(&[]);
    p.send(&request(replay_source(&empty), "go", &dir));
    assert!(failed_message(&p).contains("holds no Cursor run"));
    assert_eq!(p.wait(Duration::from_secs(5)), 1);
    // Not a request.
    let mut p = Provider::start(&[]);
    p.send(&json!({"type": "abort"}));
    assert!(failed_message(&p).contains("must be a `request`"));
    assert_eq!(p.wait(Duration::from_secs(5)), 2);
    let mut p = Provider::start(&[]);
    p.send(&json!({"type": "request", "context": {"messages": []}}));
    assert!(failed_message(&p).contains("bad request"));
    assert_eq!(p.wait(Duration::from_secs(5)), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The spans `collector` printed for one exported run: (invoke_agent, execute_tool) counts.
fn run_and_call_spans(spans: &[common::otel::Span]) -> (usize, usize) {
    let count = |op: &str| spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some(op)).count();
    (count("invoke_agent"), count("execute_tool"))
}

#[test]
fn an_otlp_sink_beside_the_protocol_exports_the_run_and_changes_nothing_on_stdout() {
    let Some(agent) = common::otel::rotel_agent() else { return };
    let dir = common::tempdir();
    let demo = common::example("demo.jsonl");
    let (runs, calls, _) = common::otel::expected(&demo);
    assert_eq!((runs, calls), (1, 7), "the demo: one run, seven calls");
    let mut plain = Provider::start(&[]);
    plain.send(&request(replay_source(&demo), "go", &dir));
    let reference = drive(&mut plain, false);
    assert_eq!(reference.code, 0);
    let collector = common::otel::Collector::start(&agent);
    let mut seen = 0;
    for sink in [format!("otlp={}", collector.http_url()), format!("otlp-grpc={}", collector.grpc_url())] {
        let mut p = Provider::start_with(&["--sink", &sink], &[]);
        p.send(&request(replay_source(&demo), "go", &dir));
        let d = drive(&mut p, true);
        assert_eq!(d.lines, reference.lines, "{sink}: the protocol output is unchanged");
        assert_eq!(d.code, reference.code, "{sink}");
        let spans = collector.wait_for(seen + runs + calls, Duration::from_secs(20));
        assert_eq!(run_and_call_spans(&spans[seen..]), (runs, calls), "{sink}: one span per run and per call");
        seen = spans.len();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 20 item 5: a sink that lost what it took fails the provider too, once pi has the run.
#[test]
fn spans_a_collector_never_answered_are_reported_and_the_provider_exits_1() {
    let silent = common::otel::SilentCollector::start();
    let dir = common::tempdir();
    let demo = common::example("demo.jsonl");
    let (runs, calls, _) = common::otel::expected(&demo);
    let mut plain = Provider::start(&[]);
    plain.send(&request(replay_source(&demo), "go", &dir));
    let reference = drive(&mut plain, false);
    assert_eq!(reference.code, 0);
    let sink = format!("otlp={}", silent.url());
    let mut p = Provider::start_with(&["--sink", &sink], &[]);
    p.send(&request(replay_source(&demo), "go", &dir));
    let d = drive(&mut p, false);
    assert_eq!(d.lines, reference.lines, "pi gets the whole run");
    assert_eq!(d.code, 1, "{}", p.said);
    let line = format!("toolstream: sink {sink}: {} spans not delivered (", runs + calls);
    assert!(p.said.lines().any(|l| l.starts_with(&line)), "{line}…: {}", p.said);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sink_writing_to_stdout_is_refused() {
    let run = common::toolstream(&["pi-provider", "--sink", "cards"], Some(b""));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing but the protocol on stdout");
    assert!(run.stderr.contains("stdout carries the protocol"), "{}", run.stderr);
}

// ------------------------------------------------------------------------------------------------
// The cursor-agent source, with a stand-in cursor-agent
// ------------------------------------------------------------------------------------------------

/// A `cursor-agent` stand-in: writes its arguments (one per line) to `$FAKE_ARGS`, prints
/// `$FAKE_STREAM`, then `$FAKE_STDERR` on stderr, and exits with `$FAKE_EXIT` (or, with
/// `$FAKE_LINGER` set, keeps running with its output open).
fn fake_cursor_agent(dir: &Path) -> PathBuf {
    let path = dir.join("cursor-agent");
    std::fs::write(
        &path,
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_ARGS\"\n[ -n \"$FAKE_STREAM\" ] && cat \"$FAKE_STREAM\"\n\
         [ -n \"$FAKE_STDERR\" ] && printf '%s\\n' \"$FAKE_STDERR\" >&2\n[ -n \"$FAKE_LINGER\" ] && exec sleep 30\n\
         exit \"${FAKE_EXIT:-0}\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// The stand-in in a fresh folder, and the variables that point a provider at it.
struct FakeAgent {
    dir: PathBuf,
    agent: String,
    args_file: String,
}

impl FakeAgent {
    fn new() -> FakeAgent {
        let dir = common::tempdir();
        let agent = fake_cursor_agent(&dir).display().to_string();
        let args_file = dir.join("args.txt").display().to_string();
        FakeAgent { dir, agent, args_file }
    }

    /// The stand-in and where it writes its arguments, then `more`.
    fn envs<'a>(&'a self, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut envs = vec![("TOOLSTREAM_CURSOR_AGENT", self.agent.as_str()), ("FAKE_ARGS", self.args_file.as_str())];
        envs.extend_from_slice(more);
        envs
    }

    /// The arguments of its last call, one per line.
    fn args(&self) -> String {
        std::fs::read_to_string(&self.args_file).unwrap()
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(unix)]
#[test]
fn cursor_agent_runs_with_the_prompt_and_streams_live() {
    let fake = FakeAgent::new();
    let dir = &fake.dir;
    let demo = common::example("demo.jsonl");
    let mut p = Provider::start(&fake.envs(&[("FAKE_STREAM", demo.to_str().unwrap())]));
    p.send(&request(json!({"kind": "cursor-agent", "args": ["--force"]}), "fix the rounding bug", dir));
    let d = drive(&mut p, false);
    check_protocol(&d.lines).unwrap();
    assert_eq!(cursor_names(&d.messages), session_messages(&demo));
    assert_eq!(d.code, 0);
    // Its chat id (the `system/init` session id) comes first, for `--resume` later.
    assert_eq!(d.lines[0], json!({"type": "chat", "chatId": "5f1c2a9e-7b3d-4e21-9c8a-2d6f0e4b1a77"}));
    let args = fake.args();
    let expected = [
        "-p",
        "--output-format",
        "stream-json",
        "--stream-partial-output",
        "--model",
        "auto",
        "--workspace",
        dir.to_str().unwrap(),
        "--force",
        "fix the rounding bug",
    ];
    assert_eq!(args.lines().collect::<Vec<_>>(), expected);
}

#[cfg(unix)]
#[test]
fn a_delivered_run_ends_when_the_client_leaves_even_if_cursor_agent_lingers() {
    let fake = FakeAgent::new();
    let demo = common::example("demo.jsonl");
    let mut p = Provider::start(&fake.envs(&[("FAKE_STREAM", demo.to_str().unwrap()), ("FAKE_LINGER", "1")]));
    p.send(&request(json!({"kind": "cursor-agent"}), "go", &fake.dir));
    loop {
        let l = p.next();
        match (l["type"].as_str().unwrap(), l["reason"].as_str()) {
            ("tool_results", _) => {
                for r in l["results"].as_array().unwrap() {
                    p.send(&json!({"type": "tool_result", "toolCallId": r["toolCallId"]}));
                }
            }
            ("done", Some("stop")) => break,
            _ => {}
        }
    }
    // The run is out but cursor-agent has not ended its output: the client leaving ends it all.
    assert!(p.quiet_for(Duration::from_millis(200)));
    let left = Instant::now();
    p.close_stdin();
    assert_eq!(p.wait(Duration::from_secs(10)), 0);
    assert!(left.elapsed() < Duration::from_secs(5));
}

/// The first 20 lines of the demo, written to `dir/head.jsonl`: a run that is open and has
/// delivered a message but has not ended.
#[cfg(unix)]
fn demo_head(dir: &Path) -> PathBuf {
    let head = dir.join("head.jsonl");
    let demo = std::fs::read_to_string(common::example("demo.jsonl")).unwrap();
    std::fs::write(&head, demo.lines().take(20).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    head
}

#[cfg(unix)]
#[test]
fn a_failing_cursor_agent_ends_the_run_with_its_scrubbed_stderr() {
    let fake = FakeAgent::new();
    let dir = &fake.dir;
    // The first 20 lines of the demo: the run is open (and has delivered a message) when it dies.
    let head = demo_head(dir);
    let secret = "key_0123456789abcdefSECRET";
    let stderr = format!("boom: request failed with {secret}");
    let envs = fake.envs(&[
        ("FAKE_STREAM", head.to_str().unwrap()),
        ("FAKE_STDERR", stderr.as_str()),
        ("FAKE_EXIT", "3"),
        ("CURSOR_API_KEY", secret),
    ]);
    let mut p = Provider::start(&envs);
    p.send(&request(json!({"kind": "cursor-agent"}), "go", dir));
    let d = drive(&mut p, false);
    check_protocol(&d.lines).unwrap();
    let last = d.messages.last().unwrap();
    assert_eq!(last["stopReason"], "error");
    let msg = last["errorMessage"].as_str().unwrap();
    assert!(msg.starts_with("cursor-agent exited with status 3: boom: request failed with"), "{msg}");
    assert!(!msg.contains(secret), "{msg}");
    assert!(d.messages.len() > 1, "the messages before the failure were delivered");
    assert_eq!(d.code, 1);

    // Failing before any run: one failed message with the error.
    let mut p = Provider::start(&fake.envs(&[("FAKE_STDERR", "Error: not logged in"), ("FAKE_EXIT", "1")]));
    p.send(&request(json!({"kind": "cursor-agent"}), "go", dir));
    assert_eq!(failed_message(&p), "cursor-agent exited with status 1: Error: not logged in");
    assert_eq!(p.wait(Duration::from_secs(5)), 1);

    // No cursor-agent at all.
    let missing = dir.join("no-such-cursor-agent");
    let mut p = Provider::start(&[("TOOLSTREAM_CURSOR_AGENT", missing.to_str().unwrap())]);
    p.send(&request(json!({"kind": "cursor-agent"}), "go", dir));
    assert!(failed_message(&p).starts_with(&format!("cannot start {}", missing.display())));
    assert_eq!(p.wait(Duration::from_secs(5)), 1);
}

// ------------------------------------------------------------------------------------------------
// Real pi
// ------------------------------------------------------------------------------------------------

/// pi with a fresh agent dir, home and offline mode ([`common::pi::pi_command`]), run in
/// `home/work`, loading the extension with toolstream from this build. Retries are off so a
/// failed run is reported once.
fn pi_command(pi: &Path, home: &Path) -> Command {
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = common::pi::pi_command(pi, home);
    std::fs::write(home.join("agent/settings.json"), r#"{"retry":{"enabled":false}}"#).unwrap();
    cmd.current_dir(&work)
        .env("TOOLSTREAM_BIN", toolstream_bin())
        .env_remove("TOOLSTREAM_CURSOR_REPLAY")
        .env_remove("TOOLSTREAM_REPLAY_REALTIME")
        .env_remove("CURSOR_API_KEY")
        .args(["--no-extensions", "-e"])
        .arg(extension())
        .args(["--provider", "cursor", "--model", "auto"]);
    cmd
}

fn without_timestamp(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("timestamp");
    }
    m
}

/// pi's events for a replayed run hold `expected` (the session sink's messages for the
/// recording): the same assistant messages, one tool execution per call with its recorded result,
/// tool result messages with the recorded content; the session file pi wrote holds them too.
fn check_pi_run(run: &PiRun, home: &Path, expected: &[Value]) -> Result<(), String> {
    let sessions = files_under(&home.join("agent/sessions"));
    let [session] = sessions.as_slice() else { return Err(format!("expected one session file, found {sessions:?}")) };
    check_pi_run_into(run, session, expected)
}

/// [`check_pi_run`], pi's session file named.
fn check_pi_run_into(run: &PiRun, session: &Path, expected: &[Value]) -> Result<(), String> {
    let ends: Vec<&Value> = run.events.iter().filter(|e| e["type"] == "message_end").map(|e| &e["message"]).collect();
    // pi's own messages are not the run's: the prompt, and (pi 0.86+) the system prompt it records.
    let delivered: Vec<&Value> =
        ends.iter().copied().filter(|m| m["role"] != "user" && m["role"] != "system").collect();
    if delivered.len() != expected.len() {
        return Err(format!(
            "pi ended {} messages, the recording has {}; stderr: {}",
            delivered.len(),
            expected.len(),
            run.stderr
        ));
    }
    let mut executions: HashMap<String, (usize, usize, Option<&Value>)> = HashMap::new();
    for e in &run.events {
        let id = e["toolCallId"].as_str().unwrap_or("").to_owned();
        match e["type"].as_str() {
            Some("tool_execution_start") => executions.entry(id).or_default().0 += 1,
            Some("tool_execution_end") => {
                let x = executions.entry(id).or_default();
                x.1 += 1;
                x.2 = Some(e);
            }
            _ => {}
        }
    }
    let mut calls = 0;
    for (got, want) in delivered.iter().zip(expected) {
        if want["role"] == "assistant" {
            // The provider's messages carry the model id pi asked for, Cursor's name aside.
            let got = &cursor_names(std::slice::from_ref(*got))[0];
            if got != want {
                return Err(format!("assistant message differs:\n pi:   {got}\n want: {want}"));
            }
            continue;
        }
        calls += 1;
        if without_timestamp(got) != without_timestamp(want) {
            return Err(format!("tool result differs:\n pi:   {got}\n want: {want}"));
        }
        let id = want["toolCallId"].as_str().unwrap();
        let Some((1, 1, Some(end))) = executions.get(id).copied() else {
            return Err(format!("tool call {id}: not exactly one tool_execution_start/end"));
        };
        if end["result"]["content"] != want["content"] || end["isError"] != want["isError"] {
            return Err(format!("tool_execution_end of {id} does not carry the recorded result: {end}"));
        }
    }
    // The text, streamed: pi's own `text_delta` events spell the run's text exactly once.
    let streamed: String = run
        .events
        .iter()
        .filter(|e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap_or(""))
        .collect();
    if streamed != assistant_text(expected) {
        return Err(format!("pi streamed the text {streamed:?}, the run's text is {:?}", assistant_text(expected)));
    }
    if executions.len() != calls {
        return Err(format!("{} tool executions for {calls} replayed calls", executions.len()));
    }
    // The session file pi wrote.
    let saved: Vec<Value> = std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].clone())
        .collect();
    let ends: Vec<Value> = ends.into_iter().cloned().collect();
    if saved != ends {
        return Err(format!("the session file holds {} messages, pi ended {}", saved.len(), ends.len()));
    }
    Ok(())
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

fn assistant_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap())
        .collect()
}

#[test]
fn real_pi_replays_recorded_runs() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let started = Instant::now();
        let mut all = common::captures_and_examples();
        // The conformance recordings (tests/conformance.rs): every display argument must pass pi's own
        // validation of its tool's schema, and every incomplete-call card get its result.
        let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conformance");
        for name in ["display.jsonl", "grep.jsonl", "incomplete-finished-without-text.jsonl", "incomplete-failed.jsonl"]
        {
            all.push(conformance.join(name));
        }
        // Each worker is one pi in RPC mode, as a person's pi lives on from prompt to prompt: a new
        // session per recording, the recording being the one `current.jsonl` links to when the
        // prompt is sent (the extension reads $TOOLSTREAM_CURSOR_REPLAY per request).
        let next = AtomicUsize::new(0);
        let results: Vec<(String, Result<String, String>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    s.spawn(|| {
                        let home = common::tempdir();
                        let current = home.join("current.jsonl");
                        let mut cmd = pi_command(&pi, &home);
                        cmd.env("TOOLSTREAM_CURSOR_REPLAY", &current);
                        let mut rpc = Rpc::start(cmd);
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(capture) = all.get(i) else { break };
                            let _ = std::fs::remove_file(&current);
                            std::os::unix::fs::symlink(capture, &current).unwrap();
                            let expected = session_messages(capture);
                            let (run, session) = replay_in_session(&mut rpc, i, "Replay the recorded Cursor run.");
                            let res = check_pi_run_into(&run, &session, &expected)
                                .map(|()| expected.last().unwrap()["stopReason"].as_str().unwrap().to_owned());
                            out.push((common::name(capture), res));
                        }
                        assert!(rpc.close(common::pi::PI_TIMEOUT).is_some(), "pi --mode rpc did not exit");
                        let _ = std::fs::remove_dir_all(&home);
                        out
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
        });
        eprintln!("replayed {} runs in real pi in {:.1}s", results.len(), started.elapsed().as_secs_f64());
        let failures: Vec<String> =
            results.iter().filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: {e}"))).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let stops = results.iter().filter(|(_, r)| r.as_deref() == Ok("stop")).count();
        assert!(results.iter().any(|(n, r)| n == "demo" && r.as_deref() == Ok("stop")), "{results:?}");
        if !common::cli_captures().is_empty() {
            assert!(stops >= 3, "only {stops} runs ended with stop: {results:?}");
        }
    });
}

/// In a new session of the RPC pi, `prompt` run to its end: pi's events from `agent_start` to
/// `agent_end`, and the session file they went to.
fn replay_in_session(rpc: &mut Rpc, k: usize, prompt: &str) -> (PiRun, PathBuf) {
    rpc.call(&format!("new-{k}"), json!({"type": "new_session"}));
    rpc.call(&format!("prompt-{k}"), json!({"type": "prompt", "message": prompt}));
    let events = rpc.events_between(|e| e["type"] == "agent_start", |e| e["type"] == "agent_end");
    let state = rpc.call(&format!("state-{k}"), json!({"type": "get_state"}));
    let session = PathBuf::from(state["data"]["sessionFile"].as_str().unwrap_or_default());
    (PiRun { events, stderr: String::new() }, session)
}

/// CLI stream-json: `touch` and `rm` shells, an edit and a write, each completed successfully.
fn dangerous_recording(dir: &Path, work: &Path) -> PathBuf {
    let s = "danger-1";
    let mut t = 1_790_000_000_000u64;
    let mut lines = vec![
        json!({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": work, "session_id": s, "model": "Auto", "permissionMode": "default"}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "clean up"}]}, "session_id": s}),
    ];
    let mut timed = |mut v: Value| {
        t += 100;
        v["session_id"] = s.into();
        v["timestamp_ms"] = t.into();
        v
    };
    lines.push(timed(json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Cleaning up."}]}})));
    let w = work.display();
    let shell = |cmd: String| {
        (
            "shellToolCall",
            json!({"command": cmd, "workingDirectory": "", "timeout": 30000}),
            json!({"success": {"command": cmd, "exitCode": 0, "stdout": "", "stderr": ""}}),
        )
    };
    let calls = [
        shell(format!("touch {w}/SHOULD_NOT_EXIST")),
        shell(format!("rm {w}/keep.txt")),
        (
            "editToolCall",
            json!({"path": format!("{w}/keep.txt"), "old_string": "keep me", "new_string": "changed"}),
            json!({"success": {"path": format!("{w}/keep.txt"), "linesAdded": 1, "linesRemoved": 1,
                "diffString": "--- a/keep.txt\n+++ b/keep.txt\n@@ -1 +1 @@\n-keep me\n+changed", "message": "edited"}}),
        ),
        (
            "writeToolCall",
            json!({"path": format!("{w}/written.txt"), "content": "new file\n"}),
            json!({"success": {"path": format!("{w}/written.txt"), "linesCreated": 1}}),
        ),
    ];
    for (k, (key, args, result)) in calls.into_iter().enumerate() {
        let id = format!("call-{k}");
        lines.push(timed(json!({"type": "tool_call", "subtype": "started", "call_id": id, "tool_call": {key: {"args": args}}, "model_call_id": "m-1"})));
        lines.push(timed(json!({"type": "tool_call", "subtype": "completed", "call_id": id, "tool_call": {key: {"args": args, "result": result}}, "model_call_id": "m-1"})));
    }
    lines.push(timed(json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": " All clean."}]}})));
    lines.push(timed(json!({"type": "result", "subtype": "success", "is_error": false, "result": "Cleaning up. All clean.", "duration_ms": 900})));
    let path = dir.join("danger.jsonl");
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

#[test]
fn real_pi_exports_its_cursor_runs_to_the_sinks_of_toolstream_pi_sinks() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let Some(agent) = common::otel::rotel_agent() else { return };
        let collector = common::otel::Collector::start(&agent);
        let home = common::tempdir();
        let demo = common::example("demo.jsonl");
        let (runs, calls, _) = common::otel::expected(&demo);
        let mut cmd = pi_command(&pi, &home);
        // Two specs, comma- and space-separated; the second with its own option.
        let sinks = format!("otlp={}, otlp-grpc={},when_full=block", collector.http_url(), collector.grpc_url());
        cmd.env("TOOLSTREAM_CURSOR_REPLAY", &demo).env("TOOLSTREAM_PI_SINKS", &sinks);
        let run = print_json(cmd, "go").unwrap();
        check_pi_run(&run, &home, &session_messages(&demo)).unwrap();
        // The provider may still be exporting after pi exited: wait (bounded) for both copies.
        let spans = collector.wait_for(2 * (runs + calls), Duration::from_secs(20));
        assert_eq!(run_and_call_spans(&spans), (2 * runs, 2 * calls), "each sink got the run and every call");
        let _ = std::fs::remove_dir_all(&home);
    });
}

#[test]
fn real_pi_never_reruns_recorded_tools() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let home = common::tempdir();
        let work = home.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let keep = work.join("keep.txt");
        std::fs::write(&keep, "keep me\n").unwrap();
        let recording = dangerous_recording(&home, &work);
        let expected = session_messages(&recording);
        let names: Vec<&str> =
            expected.iter().filter(|m| m["role"] == "toolResult").map(|m| m["toolName"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["bash", "bash", "edit", "write"],
            "native cards, so pi's own tools are the ones asked to run"
        );
        let mut cmd = pi_command(&pi, &home);
        cmd.env("TOOLSTREAM_CURSOR_REPLAY", &recording);
        let run = print_json(cmd, "clean up").unwrap();
        check_pi_run(&run, &home, &expected).unwrap();
        assert!(!work.join("SHOULD_NOT_EXIST").exists(), "the recorded touch ran");
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep me\n", "the recorded rm or edit ran");
        assert!(!work.join("written.txt").exists(), "the recorded write ran");
        let _ = std::fs::remove_dir_all(&home);
    });
}

#[cfg(unix)]
#[test]
fn real_pi_runs_cursor_agent_with_the_prompt() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let home = common::tempdir();
        let agent = fake_cursor_agent(&home);
        let args_file = home.join("args.txt");
        let demo = common::example("demo.jsonl");
        let mut cmd = pi_command(&pi, &home);
        cmd.env("TOOLSTREAM_CURSOR_AGENT", &agent)
            .env("TOOLSTREAM_CURSOR_AGENT_ARGS", "--force --trust")
            .env("FAKE_ARGS", &args_file)
            .env("FAKE_STREAM", &demo);
        let run = print_json(cmd, "fix the rounding bug").unwrap();
        check_pi_run(&run, &home, &session_messages(&demo)).unwrap();
        let args = std::fs::read_to_string(&args_file).unwrap();
        let work = home.join("work").canonicalize().unwrap();
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(args[..6], ["-p", "--output-format", "stream-json", "--stream-partial-output", "--model", "auto"]);
        assert_eq!(args[6], "--workspace");
        assert_eq!(Path::new(args[7]).canonicalize().unwrap(), work);
        assert_eq!(args[8..], ["--force", "--trust", "fix the rounding bug"]);
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// Processes whose parent is `parent` and whose command line mentions `pi-provider` (Linux).
fn provider_children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains("pi-provider") {
            out.push(pid);
        }
    }
    out
}

/// Whether process `pid` is gone (or only a zombie waiting to be reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn real_pi_abort_ends_with_aborted_and_leaves_no_process() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let home = common::tempdir();
        let recording = slow_recording(&home);
        let mut cmd = pi_command(&pi, &home);
        cmd.env("TOOLSTREAM_CURSOR_REPLAY", &recording).env("TOOLSTREAM_REPLAY_REALTIME", "1");
        let mut rpc = Rpc::start(cmd);
        rpc.send(json!({"id": "p", "type": "prompt", "message": "wait for it"}));
        rpc.until(|e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta");
        let providers = provider_children(rpc.pid());
        assert_eq!(providers.len(), 1, "one toolstream pi-provider while the run streams: {providers:?}");
        let asked = Instant::now();
        rpc.send(json!({"id": "a", "type": "abort"}));
        let end = rpc.until_within(|e| e["type"] == "agent_end", Duration::from_secs(10));
        // The recording's next event is a minute away: the run ended because of the abort.
        assert!(asked.elapsed() < Duration::from_secs(10));
        let last = end["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (last["role"].as_str(), last["stopReason"].as_str()),
            (Some("assistant"), Some("aborted")),
            "{last}"
        );
        assert_eq!(last["content"], json!([{"type": "text", "text": "Working"}]));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !providers.iter().all(|p| gone(*p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(providers.iter().all(|p| gone(*p)), "toolstream pi-provider {providers:?} outlived the abort");
        assert!(provider_children(rpc.pid()).is_empty());
        let code = rpc.close(Duration::from_secs(15));
        assert!(code.is_some(), "pi --mode rpc did not exit at the end of its input");
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// pi retries a failed message by itself when the error text looks transient ("timeout", …). For
/// Cursor that would run the prompt again — its tools may already have acted — so the extension
/// starts one run per prompt and refuses the retry with a message pi does not retry.
#[test]
fn real_pi_never_retries_a_cursor_run() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        let home = common::tempdir();
        let starts = home.join("starts.txt");
        // A stand-in for `toolstream pi-provider` that records each start and dies like a flaky
        // network: pi's retry pattern matches its message.
        let fake = home.join("fake-toolstream");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\n[ \"$1\" = pi-provider ] || exit 1\necho start >> '{}'\necho 'connection timeout talking to Cursor' >&2\nexit 1\n",
                starts.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut cmd = pi_command(&pi, &home);
        // Retries on, quickly.
        std::fs::write(
            home.join("agent/settings.json"),
            r#"{"retry":{"enabled":true,"maxRetries":2,"baseDelayMs":50}}"#,
        )
        .unwrap();
        cmd.env("TOOLSTREAM_BIN", &fake);
        let _ = print_json(cmd, "delete the build folder");
        let started = std::fs::read_to_string(&starts).unwrap_or_default();
        assert_eq!(started.lines().count(), 1, "the Cursor run started more than once");
        // pi did try again (so the guard, not a setting, prevented the second run), and was refused.
        let sessions: String = files_under(&home.join("agent"))
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect();
        assert!(sessions.contains("not started again for the same prompt"), "no refused retry in: {sessions}");
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// Every supported pi gives `toolstream pi-provider` the same `request`: pi 0.86+ hands the
/// provider its prompt and tool declarations as `system` messages, which the extension folds back
/// into `systemPrompt` and `tools` (integrations/pi/pi-compat.ts), as pi 0.73 passes them.
#[cfg(unix)]
#[test]
fn real_pi_sends_the_same_request_shape_whatever_its_version() {
    common::each_pi(|pi| {
        let home = common::tempdir();
        let request = home.join("request.json");
        // A stand-in for `toolstream pi-provider` that keeps the request line and fails.
        let fake = home.join("fake-toolstream");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\nhead -n 1 > '{}'\necho 'no backend here' >&2\nexit 3\n", request.display()),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut cmd = pi_command(&pi.bin(), &home);
        cmd.env("TOOLSTREAM_BIN", &fake);
        let _ = print_json(cmd, "hello there");
        let line = std::fs::read_to_string(&request).unwrap();
        let request: Value = serde_json::from_str(&line).unwrap();
        let context = &request["context"];
        let roles: Vec<&str> =
            context["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user"], "{pi}: {context}");
        assert_eq!(context["messages"][0]["content"], json!([{"type": "text", "text": "hello there"}]), "{pi}");
        let prompt = context["systemPrompt"].as_str().unwrap_or_default();
        assert!(prompt.contains("read"), "{pi}: no system prompt in {context}");
        let tools: Vec<&str> =
            context["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        for name in ["cursor", "read", "bash", "edit", "write"] {
            assert!(tools.contains(&name), "{pi}: no tool {name} in {tools:?}");
        }
        assert!(context["tools"].as_array().unwrap().iter().all(|t| t["parameters"].is_object()), "{pi}");
        let _ = std::fs::remove_dir_all(&home);
    });
}

/// A stand-in cursor-agent that streams `FAKE_STREAM`, starts a background process that inherits
/// its output (as `npm run dev &` would), records that process's pid, and then either exits with
/// 7 or waits in the foreground (`FAKE_WAIT`), recording its own pid too.
#[cfg(unix)]
fn agent_with_a_background_process(dir: &Path) -> PathBuf {
    let path = dir.join("cursor-agent-bg");
    std::fs::write(
        &path,
        "#!/bin/sh\ncat \"$FAKE_STREAM\"\nsleep 1000 &\necho $! >> \"$FAKE_PIDS\"\necho $$ >> \"$FAKE_PIDS\"\n\
         [ -n \"$FAKE_WAIT\" ] && sleep 1000\nexit 7\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[cfg(unix)]
#[test]
fn a_run_ends_when_cursor_agent_exits_even_if_something_it_started_holds_its_output() {
    let dir = common::tempdir();
    let agent = agent_with_a_background_process(&dir);
    let pid_file = dir.join("pids.txt");
    let demo = common::example("demo.jsonl");
    let envs = [
        ("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()),
        ("FAKE_STREAM", demo.to_str().unwrap()),
        ("FAKE_PIDS", pid_file.to_str().unwrap()),
    ];
    let started = Instant::now();
    let mut p = Provider::start(&envs);
    p.send(&request(json!({"kind": "cursor-agent"}), "go", &dir));
    let d = drive(&mut p, false);
    check_protocol(&d.lines).unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "the run ended only after {:?}", started.elapsed());
    // The whole recorded run arrived; the exit status is reported (the demo has its result line,
    // so the run itself finished).
    assert_eq!(d.messages.last().unwrap()["stopReason"], "stop");
    // What cursor-agent started is gone with it.
    let recorded = pids(&pid_file);
    assert_eq!(recorded.len(), 2);
    std::thread::sleep(Duration::from_millis(300));
    assert!(gone(recorded[0]), "background process {} survived", recorded[0]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn abort_stops_cursor_agent_and_everything_it_started() {
    let dir = common::tempdir();
    let agent = agent_with_a_background_process(&dir);
    let pid_file = dir.join("pids.txt");
    // The first 20 lines of the demo: cursor-agent is still "working" when the client aborts.
    let head = demo_head(&dir);
    let envs = [
        ("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()),
        ("FAKE_STREAM", head.to_str().unwrap()),
        ("FAKE_PIDS", pid_file.to_str().unwrap()),
        ("FAKE_WAIT", "1"),
    ];
    let mut p = Provider::start(&envs);
    p.send(&request(json!({"kind": "cursor-agent"}), "go", &dir));
    while p.next()["type"] != "tool_results" {}
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids(&pid_file).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let recorded = pids(&pid_file);
    assert_eq!(recorded.len(), 2);
    p.send(&json!({"type": "abort"}));
    assert_eq!(p.wait(Duration::from_secs(10)), 130);
    std::thread::sleep(Duration::from_millis(300));
    for pid in recorded {
        assert!(gone(pid), "process {pid} survived the abort");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
