//! The OpenAI-compatible side (SPEC §1.4, §9.5): exec recordings replayed to the `openai-sse`
//! sink, and `serve openai` driven by the official `openai` Python SDK (from `.venv`, installed by
//! `scripts/install-py`; required under `./scripts/test`) against a recording and against a
//! stand-in cursor-agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
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
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let probe = Command::new(&python).args(["-c", "import openai, mcp"]).output();
    if probe.is_ok_and(|o| o.status.success()) {
        return Some(python);
    }
    assert!(
        std::env::var_os("TOOLSTREAM_REQUIRE_PY").is_none(),
        "the openai/mcp SDKs are absent: run scripts/install-py"
    );
    eprintln!("note: the openai or mcp Python SDK is not installed (scripts/install-py); the SDK check is skipped");
    None
}

/// `serve openai` on a free loopback port; returns the child and its base URL.
fn start_server(args: &[&str], vars: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.args(["serve", "openai", "--addr", "127.0.0.1:0"]).args(args).envs(vars.iter().copied());
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("toolstream: serving OpenAI chat completions on ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(url) => (child, url),
        Err(_) => {
            let _ = child.kill();
            panic!("the server did not start");
        }
    }
}

fn run_client(python: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openai_client.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).args(args);
    let done = common::run_with_timeout(&mut cmd, None, Duration::from_secs(120)).unwrap();
    assert_eq!(done.code, Some(0), "client failed:\n{}\n{}", done.stdout, done.stderr);
    serde_json::from_str(done.stdout.trim()).unwrap()
}

#[test]
fn the_openai_sdk_runs_a_recorded_tool_loop_and_gets_openai_errors() {
    let Some(python) = python() else { return };
    let recording = common::example("exec-demo.jsonl");
    let (mut server, url) = start_server(&["--replay", recording.to_str().unwrap(), "--api-key", "test-key"], &[]);
    let seen = run_client(&python, &["replay", &url, "test-key"]);
    let _ = server.kill();
    let _ = server.wait();
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
    let (mut server, url) = start_server(
        &[],
        &[("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()), ("STANDIN_ARGS", args_log.to_str().unwrap())],
    );
    let seen = run_client(&python, &["live", &url]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(seen["finish"], "stop");
    assert!(seen["content"].as_str().unwrap().contains("Fixed `total()` in src/price.ts"), "{seen}");
    assert!(seen["streamed"].as_str().unwrap().contains("Fixed `total()`"), "{seen}");
    let args = std::fs::read_to_string(&args_log).unwrap();
    assert!(args.contains(toolstream::conversation::HISTORY_HEADER), "{args}");
    assert!(args.contains("[system]\nYou are terse."), "{args}");
    assert!(args.contains("It rounds totals (HISTORY-MARKER-7)."), "{args}");
    assert!(args.contains(&format!("{}\nFix the rounding bug.", toolstream::conversation::REQUEST_HEADER)), "{args}");
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
    // The user's home, whose MCP configuration must stay as it is.
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    let own = r#"{"mcpServers":{"mine":{"command":"my-server"}}}"#;
    std::fs::write(home.join(".cursor/mcp.json"), own).unwrap();
    let log = dir.join("agent-log.json");
    let (mut server, url) = start_server(
        &[],
        &[
            ("TOOLSTREAM_CURSOR_AGENT", agent.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
            ("FAKE_LOG", log.to_str().unwrap()),
            ("FAKE_TOOL", "sem_reindex"),
            ("FAKE_ARGS", r#"{"path":"src"}"#),
        ],
    );
    let seen = run_client(&python, &["tools", &url, runs.to_str().unwrap()]);
    let _ = server.kill();
    let _ = server.wait();
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
