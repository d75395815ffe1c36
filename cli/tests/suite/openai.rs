//! The OpenAI-compatible side (SPEC §1.4, §9.5): exec recordings replayed to the `openai-sse`
//! sink, and `serve openai` driven by the official `openai` Python SDK (from `.venv`, installed by
//! `scripts/install-py`; required under `./scripts/test`) against a recording and against a
//! stand-in cursor-agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::http;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

fn sse_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// `toolstream replay --sink openai-sse=…` of an example: the SSE text it wrote.
fn replay_to_sse(example: &str) -> String {
    let dir = common::tempdir();
    let out = dir.join("o.sse");
    let run = common::toolstream(
        &["replay", "--sink", &format!("openai-sse={}", out.display()), common::example(example).to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    text
}

#[test]
fn an_exec_recording_becomes_responses_that_end_with_its_tool_calls() {
    let text = replay_to_sse("exec-demo.jsonl");
    assert_eq!(text.matches("data: [DONE]\n\n").count(), 5, "4 tool-call responses and the answer");
    let events = sse_events(&text);
    let finishes: Vec<&str> = events.iter().filter_map(|e| e["choices"][0]["finish_reason"].as_str()).collect();
    assert_eq!(finishes, ["tool_calls", "tool_calls", "tool_calls", "tool_calls", "stop"]);
    let calls: Vec<(String, Value)> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .map(|c| {
            assert_eq!(c["type"], "function");
            assert!(c["id"].as_str().unwrap().starts_with("call_"));
            let args = serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            (c["function"]["name"].as_str().unwrap().to_owned(), args)
        })
        .collect();
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["bash", "read", "grep", "get_weather"]);
    assert_eq!(calls[0].1, serde_json::json!({"command": "ls src", "cwd": "/work/demo"}));
    assert_eq!(calls[3].1, serde_json::json!({"location": "Tokyo"}));
    // Each response opens with one role chunk; the last carries the usage.
    let roles = events.iter().filter(|e| e["choices"][0]["delta"]["role"] == "assistant").count();
    assert_eq!(roles, 5);
    let last = events.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(last["usage"]["total_tokens"].as_u64().unwrap() > 0, "{last}");
    let content: String = events.iter().filter_map(|e| e["choices"][0]["delta"]["content"].as_str()).collect();
    assert!(content.ends_with("22°C and partly cloudy in Tokyo."), "{content}");
    // The same recording, named explicitly.
    let forced = common::toolstream(
        &[
            "replay",
            "--format",
            "cursor-exec",
            "--color",
            "never",
            common::example("exec-demo.jsonl").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(forced.stdout.contains("$ ls src") && forced.stdout.contains("4 cards"), "{}", forced.stdout);
}

#[test]
fn cursors_own_tools_are_reasoning_lines_never_tool_calls() {
    let text = replay_to_sse("demo.jsonl");
    assert!(!text.contains("tool_calls"), "Cursor already ran these tools: the client must not");
    assert_eq!(text.matches("data: [DONE]").count(), 1);
    let events = sse_events(&text);
    let reasoning: String =
        events.iter().filter_map(|e| e["choices"][0]["delta"]["reasoning_content"].as_str()).collect();
    assert!(reasoning.contains("\n$ npm test -- --silent (error)\n"), "{reasoning}");
    assert!(reasoning.lines().all(|l| l.chars().count() <= 240 + 8), "bounded lines");
}

fn python() -> Option<PathBuf> {
    common::python(&["openai", "mcp"])
}

/// A running `serve openai` (killed when dropped): its base URL and what it said on stderr.
struct Server {
    child: Child,
    url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn addr(&self) -> SocketAddr {
        let rest = self.url.strip_prefix("http://").unwrap();
        rest[..rest.find('/').unwrap()].parse().unwrap()
    }

    fn port(&self) -> u16 {
        self.addr().port()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The key the tests' servers take (`--api-key`), unless a test is about the key itself.
const KEY: &str = "test-key";

/// `serve openai` on a free loopback port.
fn start_server(args: &[&str], vars: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.args(["serve", "openai", "--addr", "127.0.0.1:0"]).args(args).envs(vars.iter().copied());
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pipe = child.stderr.take().unwrap();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let lines = stderr.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("toolstream: serving OpenAI chat completions on ") {
                let _ = tx.send(url.to_owned());
            }
            lines.lock().unwrap().push(line);
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(url) => Server { child, url, stderr },
        Err(_) => {
            let _ = child.kill();
            panic!("the server did not start: {}", stderr.lock().unwrap().join("\n"));
        }
    }
}

fn run_client(python: &Path, args: &[&str]) -> Value {
    run_client_explained(python, args, String::new)
}

/// [`run_client`]; should the client fail or time out, the panic also says `context()` (the
/// server's stderr, say).
fn run_client_explained(python: &Path, args: &[&str], context: impl FnOnce() -> String) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openai_client.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).args(args);
    let done = match common::run_with_timeout(&mut cmd, None, Duration::from_secs(120)) {
        Ok(done) => done,
        Err(e) => panic!("client failed: {e}\n{}", context()),
    };
    assert_eq!(done.code, Some(0), "client failed:\n{}\n{}\n{}", done.stdout, done.stderr, context());
    serde_json::from_str(done.stdout.trim()).unwrap()
}

#[test]
fn the_openai_sdk_runs_a_recorded_tool_loop_and_gets_openai_errors() {
    let Some(python) = python() else { return };
    let recording = common::example("exec-demo.jsonl");
    let server = start_server(&["--replay", recording.to_str().unwrap(), "--api-key", KEY], &[]);
    let seen = run_client(&python, &["replay", &server.url, KEY]);
    drop(server);
    assert!(seen["models"].as_array().unwrap().iter().any(|m| m == "auto"), "{seen}");
    assert_eq!(
        seen["bad"],
        serde_json::json!({
            "no_messages": "invalid_messages",
            "unknown_model": "model_not_found",
            "unknown_tool_call": "invalid_tool_call_id",
            "wrong_key": "invalid_api_key",
            "malformed_json": "invalid_json"
        })
    );
    assert_eq!(seen["streamed"]["calls"], serde_json::json!(["bash", "read", "grep", "get_weather"]));
    assert_eq!(seen["streamed"]["rounds"], 5);
    assert!(seen["streamed"]["final"].as_str().unwrap().contains("partly cloudy in Tokyo"), "{seen}");
    assert_eq!(seen["non_streamed"]["first_tool"], "bash");
    assert_eq!(seen["non_streamed"]["first_args"], serde_json::json!({"command": "ls src", "cwd": "/work/demo"}));
    assert_eq!(seen["non_streamed"]["second_tool"], "read");
}

/// A stand-in for cursor-agent written for these tests: logs its arguments (one per line) to
/// `$STANDIN_ARGS` and prints a recorded stream-json run (`examples/demo.jsonl`).
#[cfg(unix)]
fn stand_in_cursor_agent(dir: &Path) -> PathBuf {
    let path = dir.join("stand-in-cursor-agent");
    let demo = common::example("demo.jsonl");
    std::fs::write(&path, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> \"$STANDIN_ARGS\"\ncat '{}'\n", demo.display()))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn the_openai_sdk_gets_a_cursor_turn_with_the_history_in_its_prompt() {
    let Some(python) = python() else { return };
    let dir = common::tempdir();
    let agent = stand_in_cursor_agent(&dir);
    let args_log = dir.join("args.txt");
    let server = start_server(
        &["--api-key", KEY],
        &[("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()), ("STANDIN_ARGS", args_log.to_str().unwrap())],
    );
    let seen = run_client(&python, &["live", &server.url, KEY]);
    drop(server);
    assert_eq!(seen["finish"], "stop");
    assert!(seen["content"].as_str().unwrap().contains("Fixed `total()` in src/price.ts"), "{seen}");
    assert!(seen["streamed"].as_str().unwrap().contains("Fixed `total()`"), "{seen}");
    let args = std::fs::read_to_string(&args_log).unwrap();
    assert!(args.contains(toolstream_hosts::conversation::HISTORY_HEADER), "{args}");
    assert!(args.contains("[system]\nYou are terse."), "{args}");
    assert!(args.contains("It rounds totals (HISTORY-MARKER-7)."), "{args}");
    assert!(
        args.contains(&format!("{}\nFix the rounding bug.", toolstream_hosts::conversation::REQUEST_HEADER)),
        "{args}"
    );
    assert!(args.starts_with("-p\n--output-format\nstream-json\n"), "{args}");
}

/// Client tools through the bridge: the stand-in cursor-agent of the pi bridge test
/// (`tests/py/cursor_agent_bridge.py`, which reads `$HOME/.cursor/mcp.json` and calls
/// `pi__<$FAKE_TOOL>` with the official MCP SDK as Cursor would) calls the client's tool; the
/// `openai` SDK sees the call, sends its result, and gets the answer quoting it — from the same
/// Cursor run, streamed and not; a result whose run is gone starts a fresh run.
#[cfg(unix)]
#[test]
fn the_openai_sdk_runs_its_own_tool_for_cursor_inside_one_run() {
    let Some(python) = python() else { return };
    let dir = common::tempdir();
    let (agent, runs) = bridged_stand_in(&dir, &python);
    // The user's home, whose MCP configuration must stay as it is.
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    let own = r#"{"mcpServers":{"mine":{"command":"my-server"}}}"#;
    std::fs::write(home.join(".cursor/mcp.json"), own).unwrap();
    let log = dir.join("agent-log.json");
    let server = start_server(
        &["--api-key", KEY],
        &[
            ("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
            ("FAKE_LOG", log.to_str().unwrap()),
            ("FAKE_TOOL", "sem_reindex"),
            ("FAKE_ARGS", r#"{"path":"src"}"#),
        ],
    );
    let seen = run_client(&python, &["tools", &server.url, KEY, runs.to_str().unwrap()]);
    drop(server);
    for flow in ["streamed", "non_streamed"] {
        let f = &seen[flow];
        assert_eq!(f["calls"], serde_json::json!([{"name": "sem_reindex", "args": {"path": "src"}}]), "{seen}");
        assert!(f["ids"][0].as_str().unwrap().starts_with("cursor-pi-bridge-run-"), "{seen}");
        assert_eq!(f["rounds"], 2, "{seen}");
        assert!(f["final"].as_str().unwrap().contains("The tool said: reindexed src: 42 files"), "{seen}");
    }
    // One Cursor run per conversation, across both of its HTTP requests.
    assert_eq!(seen["streamed"]["runs"], 1, "{seen}");
    assert_eq!(seen["non_streamed"]["runs"], 2, "{seen}");
    // The late result: a fresh run, with the earlier result in its prompt.
    assert_eq!(seen["fallback"]["runs"], 3, "{seen}");
    assert_eq!(seen["fallback"]["rounds"], 2, "{seen}");
    let logged: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let argv = logged["argv"].as_array().unwrap();
    assert!(argv.last().unwrap().as_str().unwrap().contains("LATE-RESULT"), "{logged}");
    assert!(argv.iter().any(|a| a == "--approve-mcps"), "{logged}");
    assert_eq!(logged["listed"], serde_json::json!(["pi__sem_reindex", "pi__bash"]), "every client tool is exposed");
    assert_eq!(logged["mcp_json_servers"], serde_json::json!(["mine", "pi-tools"]), "{logged}");
    assert_eq!(std::fs::read_to_string(home.join(".cursor/mcp.json")).unwrap(), own, "the user's file is unchanged");
}

/// The client's tool call reaches the bridge before the run's first line reaches the server's sink
/// (the engine behind on cursor-agent's output, as under load): it waits for the run to open and
/// ends the response as before. (It used to be dropped: the client waited for ever.)
#[cfg(unix)]
#[test]
fn a_client_call_that_comes_before_the_run_opened_waits_for_it() {
    let Some(python) = python() else { return };
    let dir = common::tempdir();
    let (server, runs) = bridged_server(&dir, &python, &[("FAKE_CALL_BEFORE_INIT", "1")]);
    let seen =
        run_client_explained(&python, &["tools", &server.url, KEY, runs.to_str().unwrap()], || bridged_steps(&dir));
    drop(server);
    let steps = std::fs::read_to_string(dir.join("trail.txt")).unwrap();
    assert!(steps.contains("call queued before the run's first line"), "{steps}");
    let f = &seen["streamed"];
    assert_eq!(f["calls"], serde_json::json!([{"name": "sem_reindex", "args": {"path": "src"}}]), "{seen}");
    assert_eq!(f["rounds"], 2, "{seen}");
    assert!(f["final"].as_str().unwrap().contains("The tool said: reindexed src: 42 files"), "{seen}");
    assert_eq!(f["runs"], 1, "{seen}");
}

/// A server whose cursor-agent is [`bridged_stand_in`] in `dir` (its home), calling the client's
/// `sem_reindex` with `{"path":"src"}`, with `extra` in its environment; and the stand-in's runs
/// file. The stand-in's steps and the bridge's log go to `dir` ([`bridged_steps`]).
fn bridged_server(dir: &Path, python: &Path, extra: &[(&str, &str)]) -> (Server, PathBuf) {
    let (agent, runs) = bridged_stand_in(dir, python);
    let paths = [agent, dir.to_owned(), dir.join("agent-log.json"), dir.join("trail.txt"), dir.join("bridge.jsonl")];
    let [agent, home, log, trail, bridge_log] = paths.each_ref().map(|p| p.to_str().unwrap());
    let mut vars = vec![
        ("TOOLSTREAM_CURSOR_AGENT", agent),
        ("HOME", home),
        ("FAKE_LOG", log),
        ("FAKE_TOOL", "sem_reindex"),
        ("FAKE_ARGS", r#"{"path":"src"}"#),
        ("FAKE_TRACE", trail),
        ("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE", bridge_log),
    ];
    vars.extend_from_slice(extra);
    (start_server(&["--api-key", KEY], &vars), runs)
}

/// How far the stand-in of [`bridged_server`] and the bridge got, for a failure message.
fn bridged_steps(dir: &Path) -> String {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
    format!("its steps:\n{}\nthe bridge's log:\n{}", read(&dir.join("trail.txt")), read(&dir.join("bridge.jsonl")))
}

/// The stand-in cursor-agent that calls a client tool through the bridge
/// (`tests/py/cursor_agent_bridge.py`), behind a launcher that appends a line to the returned
/// runs file per run.
#[cfg(unix)]
fn bridged_stand_in(dir: &Path, python: &Path) -> (PathBuf, PathBuf) {
    let standin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/cursor_agent_bridge.py");
    let runs = dir.join("runs.txt");
    let agent = dir.join("cursor-agent-mcp");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\necho run >> '{}'\nexec '{}' '{}' \"$@\"\n",
            runs.display(),
            python.display(),
            standin.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    (agent, runs)
}

/// A run paused on the client's tool that goes on producing — 12,000 assistant texts, 12 MiB,
/// past the paused-run limit (`toolstream_hosts::paused_run`, 1 MiB) — is held back, not
/// stopped and not cut: the stand-in's prints block before it printed them all, and once the
/// client answers, the next response carries every one, in order, from the same run, then the
/// answer quoting the result.
#[cfg(unix)]
#[test]
fn a_run_paused_on_a_client_tool_is_held_back_and_loses_nothing() {
    const LINES: u64 = 12_000;
    let Some(python) = python() else { return };
    let dir = common::tempdir();
    let go = dir.join("go");
    let lines = LINES.to_string();
    let chatter = [
        ("FAKE_CHATTER_LINES", lines.as_str()),
        ("FAKE_CHATTER_GO", go.to_str().unwrap()),
        // The run's decisions, for the message should it fail.
        ("TOOLSTREAM_LOG", "debug"),
    ];
    let (server, runs) = bridged_server(&dir, &python, &chatter);
    // It failed twice in whole-suite runs (the client timed out after 120 s) and never alone:
    // should it fail again, say how far the stand-in and the bridge got and what the server logged.
    let seen = run_client_explained(
        &python,
        &["paused", &server.url, KEY, runs.to_str().unwrap(), go.to_str().unwrap()],
        || {
            let written = std::fs::read_to_string(format!("{}.written", go.display())).unwrap_or_default();
            format!(
                "texts the stand-in wrote: {written}\n{}\nthe server's stderr:\n{}",
                bridged_steps(&dir),
                server.stderr()
            )
        },
    );
    let stderr = server.stderr();
    drop(server);
    let written = seen["written_while_paused"].as_u64().unwrap();
    assert!(written > 0 && written < LINES, "held back after {written} of {LINES} texts: {stderr}");
    let chatter: Vec<u64> =
        seen["chatter"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().parse().unwrap()).collect();
    let out_of_place = chatter.iter().zip(0..).find(|(got, want)| **got != *want);
    assert!(
        chatter.len() as u64 == LINES && out_of_place.is_none(),
        "every text, once, in order: {} texts, the first out of place {out_of_place:?}; {stderr}",
        chatter.len()
    );
    assert_eq!(seen["finish"], "stop", "{stderr}");
    assert_eq!(seen["tool_calls"], serde_json::json!([]));
    assert!(seen["ends_with"].as_str().unwrap().contains("The tool said: reindexed src: 42 files"), "{seen}");
    assert_eq!(seen["runs"], 1, "the same Cursor run, never stopped: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chat request body as a web page would send it.
const ATTACK: &str = r#"{"model":"auto","messages":[{"role":"user","content":"ATTACKER PROMPT"}]}"#;

/// POST `body` to the chat route of `server` with these headers (plus the right `Host` unless
/// one is given).
fn post_chat(server: &Server, headers: &[(&str, &str)], body: &[u8]) -> http::Answer {
    http::request(server.addr(), "POST", "/v1/chat/completions", headers, body)
}

/// An OpenAI-shaped error with this status and code.
fn assert_openai_error(a: &http::Answer, status: u16, code: &str) {
    assert_eq!(a.status, status, "{a:?}");
    assert!(a.header("content-type").is_some_and(|t| t.starts_with("application/json")), "{a:?}");
    let e = &a.json()["error"];
    assert_eq!(e["code"], code, "{a:?}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()) && e["type"].is_string(), "{a:?}");
}

/// Issue 20 item 2: the cross-site recipe (a "simple" request a page can send without a preflight)
/// and each of its parts alone are refused before any run starts — the stand-in cursor-agent logs
/// nothing — with OpenAI-shaped errors, as are the other refusals (404, 405, 413). The server has
/// no key (`--no-api-key`, the old default) so that the guard alone is what stops them; a plain
/// client's same request then starts the stand-in, so its log would have shown an attack.
#[cfg(unix)]
#[test]
fn a_web_page_cannot_drive_the_server_and_no_run_starts() {
    let dir = common::tempdir();
    let agent = stand_in_cursor_agent(&dir);
    let args_log = dir.join("args.txt");
    let server = start_server(
        &["--no-api-key"],
        &[("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()), ("STANDIN_ARGS", args_log.to_str().unwrap())],
    );
    assert!(server.stderr().contains("no API key (--no-api-key)"), "{}", server.stderr());
    let port = server.port();
    let evil_host = format!("evil.example:{port}");
    let json = ("Content-Type", "application/json");
    let body = ATTACK.as_bytes();

    let recipe = [("Host", evil_host.as_str()), ("Origin", "http://evil.example"), ("Content-Type", "text/plain")];
    assert_openai_error(&post_chat(&server, &recipe, body), 403, "host_not_allowed");
    // DNS rebinding: the page's own name, re-pointed at 127.0.0.1, without an Origin.
    assert_openai_error(&post_chat(&server, &[("Host", &evil_host), json], body), 403, "host_not_allowed");
    assert_openai_error(
        &post_chat(&server, &[("Origin", "http://evil.example"), json], body),
        403,
        "origin_not_allowed",
    );
    assert_openai_error(&post_chat(&server, &[("Origin", "null"), json], body), 403, "origin_not_allowed");
    assert_openai_error(&post_chat(&server, &[("Content-Type", "text/plain")], body), 415, "unsupported_content_type");
    assert_openai_error(&post_chat(&server, &[], body), 415, "unsupported_content_type");
    let preflight = [("Origin", "http://evil.example"), ("Access-Control-Request-Method", "POST")];
    let answer = http::request(server.addr(), "OPTIONS", "/v1/chat/completions", &preflight, b"");
    assert_openai_error(&answer, 403, "origin_not_allowed");
    assert_eq!(answer.header("access-control-allow-origin"), None);
    // The GET of a page's <img> or fetch() is refused too (models list).
    let answer = http::request(server.addr(), "GET", "/v1/models", &[("Origin", "http://evil.example")], b"");
    assert_openai_error(&answer, 403, "origin_not_allowed");

    // Every other refusal is OpenAI-shaped too.
    assert_openai_error(
        &http::request(server.addr(), "GET", "/v1/chat/completions", &[], b""),
        405,
        "method_not_allowed",
    );
    let unknown = http::request(server.addr(), "GET", "/v2/nothing", &[], b"");
    assert_eq!((unknown.status, unknown.json()["error"]["type"].as_str()), (404, Some("invalid_request_error")));
    let big = http::post_large(server.addr(), "/v1/chat/completions", &[json], 20 << 20);
    assert_openai_error(&big, 413, "request_too_large");
    assert!(
        !args_log.exists(),
        "a refused request started cursor-agent: {}",
        std::fs::read_to_string(&args_log).unwrap()
    );

    // The same request from a plain client (loopback Host, JSON, no Origin) runs.
    let ok = post_chat(&server, &[json], body);
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(ok.json()["choices"][0]["message"]["content"].as_str().unwrap().contains("Fixed `total()`"), "{ok:?}");
    assert!(std::fs::read_to_string(&args_log).unwrap().contains("ATTACKER PROMPT"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An origin the user allowed (`--allow-origin`, or `TOOLSTREAM_OPENAI_ALLOWED_ORIGINS`) gets its
/// preflight answered and `Access-Control-Allow-Origin` on its responses, streamed and not; any
/// other origin is still refused; `null` cannot be allowed.
#[test]
fn an_allowed_origin_passes_with_cors_headers() {
    let recording = common::example("exec-demo.jsonl");
    let rec = recording.to_str().unwrap();
    let allowed = "http://localhost:5173";
    for (args, vars) in [
        (vec!["--replay", rec, "--api-key", KEY, "--allow-origin", allowed], vec![]),
        (
            vec!["--replay", rec, "--api-key", KEY],
            vec![("TOOLSTREAM_OPENAI_ALLOWED_ORIGINS", "https://x.example, http://localhost:5173")],
        ),
    ] {
        let server = start_server(&args, &vars);
        assert!(server.stderr().contains("browser origins allowed:"), "{}", server.stderr());
        let preflight = [
            ("Origin", allowed),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"),
        ];
        let answer = http::request(server.addr(), "OPTIONS", "/v1/chat/completions", &preflight, b"");
        assert_eq!(answer.status, 204, "{answer:?}");
        assert_eq!(answer.header("access-control-allow-origin"), Some(allowed));
        assert!(answer.header("access-control-allow-methods").unwrap().contains("POST"), "{answer:?}");
        assert_eq!(answer.header("access-control-allow-headers"), Some("authorization, content-type, x-stainless-os"));
        let bearer = format!("Bearer {KEY}");
        let headers = [("Origin", allowed), ("Content-Type", "application/json"), ("Authorization", &bearer)];
        let body = br#"{"model":"auto","messages":[{"role":"user","content":"go"}]}"#;
        let done = post_chat(&server, &headers, body);
        assert_eq!(done.status, 200, "{done:?}");
        assert_eq!(done.header("access-control-allow-origin"), Some(allowed));
        assert_eq!(done.json()["choices"][0]["finish_reason"], "tool_calls", "{done:?}");
        let streamed = post_chat(
            &server,
            &headers,
            br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"go"}]}"#,
        );
        assert_eq!(streamed.status, 200, "{streamed:?}");
        assert_eq!(streamed.header("access-control-allow-origin"), Some(allowed));
        assert!(streamed.body.contains("data: [DONE]"), "{streamed:?}");
        // The key is still needed from an allowed origin.
        let no_key = post_chat(&server, &headers[..2], body);
        assert_openai_error(&no_key, 401, "invalid_api_key");
        assert_eq!(no_key.header("access-control-allow-origin"), Some(allowed), "the page may read why");
        let other = post_chat(&server, &[("Origin", "http://localhost:5174"), headers[1], headers[2]], body);
        assert_openai_error(&other, 403, "origin_not_allowed");
    }
    let refused = common::toolstream(&["serve", "openai", "--no-api-key", "--allow-origin", "null"], None);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--allow-origin `null` cannot be allowed"), "{}", refused.stderr);
}

/// Without `--api-key`, the server makes a key once, keeps it in a file only the user can read
/// (`$XDG_CONFIG_HOME/toolstream/openai-api-key`, 0600), prints it that once, and requires it:
/// the official SDK with that key works (streamed and not), without it gets 401; a restart keeps
/// the key and does not print it again.
#[cfg(unix)]
#[test]
fn without_a_key_one_is_made_private_and_required() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::tempdir();
    let xdg = dir.join("xdg");
    let recording = common::example("exec-demo.jsonl");
    let args = ["--replay", recording.to_str().unwrap()];
    let vars = [("XDG_CONFIG_HOME", xdg.to_str().unwrap()), ("TOOLSTREAM_OPENAI_API_KEY", "")];
    let server = start_server(&args, &vars);
    let file = xdg.join("toolstream/openai-api-key");
    let key = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert!(key.starts_with("tsk-") && key.len() > 40, "{key}");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(server.stderr().matches(&key).count(), 1, "printed once: {}", server.stderr());
    let no_key = http::request(server.addr(), "GET", "/v1/models", &[], b"");
    assert_openai_error(&no_key, 401, "invalid_api_key");
    if let Some(python) = python() {
        let seen = run_client(&python, &["replay", &server.url, &key]);
        assert_eq!(seen["bad"]["wrong_key"], "invalid_api_key");
        assert_eq!(seen["streamed"]["rounds"], 5, "{seen}");
        assert_eq!(seen["non_streamed"]["first_tool"], "bash", "{seen}");
    }
    drop(server);
    let again = start_server(&args, &vars);
    assert!(!again.stderr().contains(&key), "{}", again.stderr());
    assert!(again.stderr().contains(&file.display().to_string()), "{}", again.stderr());
    let bearer = format!("Bearer {key}");
    assert_eq!(http::request(again.addr(), "GET", "/v1/models", &[("Authorization", &bearer)], b"").status, 200);
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}
