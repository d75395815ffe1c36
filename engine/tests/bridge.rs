//! The pi tool bridge's MCP endpoint (SPEC §7) against a real MCP client — the official MCP Python
//! SDK (`mcp` 2.x, installed into .venv by `scripts/install-py`; under `scripts/test`,
//! `TOOLSTREAM_REQUIRE_PY` makes its absence a failure) — driving `toolstream bridge` (the test
//! plays pi's side on its stdin/stdout) and, for the load test, the server in-process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use toolstream::bridge_server::{BridgeEvent, BridgeServer, BridgeServerOptions, BridgeSettings};
use toolstream_actors::bridge::exposure::PiToolDef;

use common::{tempdir, wait_or_kill};

/// Bound of every wait for one line (the machine is shared: generous, never a timing assertion).
const LINE_WAIT: Duration = Duration::from_secs(60);

fn tools_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bridge/tools.json")
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/bridge_client.py")
}

/// The project's Python with the `mcp` SDK, or `None` (with a note) when absent — a failure under
/// `scripts/test`.
fn mcp_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let probe = Command::new(&python).args(["-c", "import mcp.client.streamable_http"]).output();
    if probe.is_ok_and(|o| o.status.success()) {
        return Some(python);
    }
    assert!(
        std::env::var_os("TOOLSTREAM_REQUIRE_PY").is_none(),
        "the mcp Python SDK is absent: run scripts/install-py"
    );
    eprintln!("note: the mcp Python SDK is not installed (scripts/install-py); the bridge client checks are skipped");
    None
}

/// Lines of a child's pipe, read on a thread, JSON-parsed when they parse.
fn line_reader(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn next_json(rx: &mpsc::Receiver<String>, what: &str) -> Value {
    let line = rx.recv_timeout(LINE_WAIT).unwrap_or_else(|e| panic!("no {what} line: {e}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what} line is not JSON ({e}): {line}"))
}

/// `toolstream bridge` with the test playing pi's side.
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<String>,
    url: String,
}

impl Bridge {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Bridge {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
        cmd.arg("bridge").arg("--tools").arg(tools_file()).args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("PI_CURSOR_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(env.iter().copied()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = line_reader(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        let first = next_json(&stdout, "listening");
        assert_eq!(first["type"], "listening", "{first}");
        let url = first["url"].as_str().unwrap().to_owned();
        Bridge { child, stdin, stdout, url }
    }

    fn port(&self) -> u16 {
        self.addr().port()
    }

    fn addr(&self) -> SocketAddr {
        let rest = self.url.strip_prefix("http://").unwrap();
        rest[..rest.find('/').unwrap()].parse().unwrap()
    }

    fn path(&self) -> String {
        let rest = self.url.strip_prefix("http://").unwrap();
        rest[rest.find('/').unwrap()..].to_owned()
    }

    fn token(&self) -> String {
        self.path().trim_start_matches("/cursor-pi-tool-bridge/").trim_end_matches("/mcp").to_owned()
    }

    fn next(&self, what: &str) -> Value {
        next_json(&self.stdout, what)
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn result(&mut self, id: &str, text: &str) {
        let line =
            json!({"type": "bridge_result", "id": id, "content": [{"type": "text", "text": text}], "isError": false});
        self.send(&line.to_string());
    }

    /// Close stdin (dispose) and wait for the exit; returns (exit code, remaining stdout, stderr).
    fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        drop(self.stdin.take());
        let mut stderr = self.child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let code = wait_or_kill(&mut self.child, LINE_WAIT).expect("toolstream bridge did not exit after stdin closed");
        let rest: Vec<String> = self.stdout.try_iter().collect();
        (code, rest, err.join().unwrap())
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;

/// A plain HTTP/1.1 POST of an MCP `initialize` to `addr` + `path`: the status and the body's
/// first bytes.
fn http_post(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    // The status line and headers (and a short body) arrive in the first reads.
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if let Ok(n) = s.read(&mut buf) {
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let status =
        text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {text}"));
    (status, text)
}

/// Wait for a client whose stdout is already taken: its exit code and stderr.
fn wait_client(mut child: Child) -> (Option<i32>, String) {
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let code = wait_or_kill(&mut child, LINE_WAIT).expect("the MCP client did not exit");
    (code, err.join().unwrap())
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

#[test]
fn a_real_mcp_client_lists_calls_and_cancels_through_the_bridge() {
    let Some(python) = mcp_python() else { return };
    let mut bridge = Bridge::start(&[], &[]);
    let mut client = Command::new(&python)
        .arg(client_script())
        .args(["session", &bridge.url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client_out = line_reader(client.stdout.take().unwrap());
    let mut client_in = client.stdin.take().unwrap();

    // tools/list: the exposed tools only (`read` is a hidden built-in, `cursor` the replay tool).
    let tools = next_json(&client_out, "tools");
    assert_eq!(tools["step"], "tools");
    let listed = tools["tools"].as_array().unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["pi__sem_reindex", "pi__slow_tool"]);
    assert_eq!(
        listed[0]["description"],
        "Rebuild the semantic index of the workspace.\n\nRun it after large edits.\n\nCall MCP name pi__sem_reindex (pi tool: sem_reindex)."
    );
    assert_eq!(
        listed[0]["inputSchema"],
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    );

    // A malformed stdin line is reported and the endpoint goes on.
    bridge.send("this is not json");
    // tools/call → a bridge_call for pi's side; its bridge_result answers the MCP call.
    let call = bridge.next("bridge_call");
    assert_eq!(
        (&call["type"], &call["tool"], &call["args"]),
        (&json!("bridge_call"), &json!("sem_reindex"), &json!({"path": "src"}))
    );
    let id = call["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("cursor-pi-bridge-run-") && id.len() <= 64, "{id}");
    bridge.result(&id, "pi reindexed src");
    let result = next_json(&client_out, "call");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(text_of(&result), "pi reindexed src");

    // An unknown name: an isError result with the SPEC's text, and nothing for pi's side.
    let unknown = next_json(&client_out, "unknown");
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert_eq!(text_of(&unknown), "Unknown pi bridge tool: pi__nope");

    // The client cancels a call pi is running: pi's side is told to abort it.
    let slow = bridge.next("bridge_call");
    assert_eq!(slow["tool"], "slow tool");
    let slow_id = slow["id"].as_str().unwrap().to_owned();
    assert_ne!(slow_id, id);
    writeln!(client_in, "cancel").unwrap();
    client_in.flush().unwrap();
    let cancel = bridge.next("bridge_cancel");
    assert_eq!(cancel, json!({"type": "bridge_cancel", "id": slow_id, "reason": "aborted"}));
    let cancelled = next_json(&client_out, "cancelled");
    assert_eq!(cancelled["step"], "cancelled");
    assert!(cancelled.get("result").is_none(), "the cancelled call got a result: {cancelled}");
    drop(client_in);

    // A result for the aborted call is refused (it resolves nothing).
    bridge.result(&slow_id, "too late");

    // Wrong token, unknown path: 404.
    let wrong = format!("/cursor-pi-tool-bridge/{}/mcp", "0".repeat(32));
    assert_ne!(wrong, bridge.path());
    assert_eq!(http_post(bridge.addr(), &wrong).0, 404);
    assert_eq!(http_post(bridge.addr(), "/mcp").0, 404);
    assert_eq!(http_post(bridge.addr(), &bridge.path()).0, 200);

    // A call still pending at the end of stdin: rejected `disposed`, pi's execution aborted.
    let pending = bridge.next("bridge_call");
    assert_eq!(pending["tool"], "slow tool");
    let addr = bridge.addr();
    let (code, rest, stderr) = bridge.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let rest: Vec<Value> = rest.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rest, [json!({"type": "bridge_cancel", "id": pending["id"], "reason": "disposed"})]);
    let disposed = next_json(&client_out, "disposed");
    assert!(disposed.get("error").is_some(), "the pending call was not rejected: {disposed}");
    let (code, client_err) = wait_client(client);
    assert_eq!(code, Some(0), "client stderr: {client_err}");
    assert!(stderr.contains("stdin line 1: not a bridge_result line"), "{stderr}");
    assert!(stderr.contains("stdin line 3: pi result refused: no pending call has this id"), "{stderr}");
    // Disposed and exited: the endpoint is gone.
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_err());
}

#[test]
fn a_deadline_rejects_the_slow_call_aborts_pi_and_diagnostics_leak_nothing() {
    let Some(python) = mcp_python() else { return };
    let dir = tempdir();
    let diag = dir.join("bridge-diagnostics.jsonl");
    let diag_s = diag.display().to_string();
    let mut bridge = Bridge::start(
        &[],
        &[
            ("PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS", "500"),
            ("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG", "1"),
            ("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE", &diag_s),
        ],
    );
    let mut client = Command::new(&python);
    client.arg(client_script()).args(["deadline", &bridge.url]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut client = client.spawn().unwrap();
    let client_out = line_reader(client.stdout.take().unwrap());

    let call = bridge.next("bridge_call");
    assert_eq!(call["args"], json!({"path": "SECRET-ARG-VALUE"}));
    bridge.result(call["id"].as_str().unwrap(), "SECRET-RESULT-TEXT");
    assert_eq!(text_of(&next_json(&client_out, "call")), "SECRET-RESULT-TEXT");

    // pi's side never answers the slow call: after 500 ms the MCP call fails with the SPEC's
    // message and pi's execution is aborted.
    let slow = bridge.next("bridge_call");
    let cancel = bridge.next("bridge_cancel");
    assert_eq!(cancel, json!({"type": "bridge_cancel", "id": slow["id"], "reason": "timeout"}));
    let deadline = next_json(&client_out, "deadline");
    let error = deadline["error"].as_str().unwrap_or_else(|| panic!("no MCP error: {deadline}"));
    assert!(error.contains("Cursor pi bridge CallTool timed out after 500 ms"), "{error}");
    let (code, stderr) = wait_client(client);
    assert_eq!(code, Some(0), "client stderr: {stderr}");

    let (port, token) = (bridge.port().to_string(), bridge.token());
    let (code, _, stderr) = bridge.finish();
    assert_eq!(code, Some(0), "{stderr}");

    let file = std::fs::read_to_string(&diag).unwrap();
    let stderr_diags: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("[toolstream:bridge] ")).collect();
    let file_diags: Vec<&str> = file.lines().collect();
    assert_eq!(stderr_diags, file_diags, "stderr and the file carry the same diagnostics");
    let mut events = HashSet::new();
    for line in &file_diags {
        let v: Value = serde_json::from_str(line).unwrap();
        events.insert(v["event"].as_str().unwrap().to_owned());
        if v["event"] == "request_rejected" {
            assert_eq!(v["rejectionKind"], "timeout", "{v}");
        }
    }
    for e in ["run_created", "tools_exposed", "request_queued", "request_resolved", "request_rejected", "run_disposed"]
    {
        assert!(events.contains(e), "no {e} diagnostic in {file}");
    }
    for (name, text) in [("the debug file", &file), ("stderr", &stderr)] {
        for secret in [
            "127.0.0.1",
            &port,
            &token,
            "/mcp",
            "cursor-pi-tool-bridge",
            "SECRET-ARG-VALUE",
            "SECRET-RESULT-TEXT",
            "timed out",
        ] {
            assert!(!text.contains(secret), "{name} contains {secret:?}:\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A non-loopback IPv4 address of this machine (its global-scope interface addresses).
fn non_loopback_local_ip() -> Option<IpAddr> {
    let out = Command::new("ip").args(["-o", "-4", "addr", "show", "scope", "global"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|cidr| cidr.split('/').next())
        .and_then(|ip| ip.parse::<IpAddr>().ok())
        .filter(|ip| !ip.is_loopback())
}

#[test]
fn a_non_loopback_peer_gets_403() {
    // The endpoint listens on every address here (`--listen 0.0.0.0`) so that a connection from
    // this machine's non-loopback interface address reaches it at all; the same valid route answers
    // a loopback peer (so the 403 is the peer check, not a wrong path).
    let ip = non_loopback_local_ip()
        .expect("this test needs a non-loopback local IPv4 address (`ip -o -4 addr show scope global`)");
    let bridge = Bridge::start(&["--listen", "0.0.0.0"], &[]);
    let port = bridge.port();
    let (ok, _) = http_post(SocketAddr::new("127.0.0.1".parse().unwrap(), port), &bridge.path());
    assert_eq!(ok, 200);
    let (status, body) = http_post(SocketAddr::new(ip, port), &bridge.path());
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("only loopback peers are served"), "{body}");
    let (code, _, stderr) = bridge.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_thousand_concurrent_calls_across_fifty_runs_each_resolve_once_with_their_own_result() {
    let Some(python) = mcp_python() else { return };
    const RUNS: usize = 50;
    const CALLS: usize = 20;
    let defs: Vec<PiToolDef> = serde_json::from_str(&std::fs::read_to_string(tools_file()).unwrap()).unwrap();
    actix::System::new().block_on(async move {
        let opts = BridgeServerOptions { settings: BridgeSettings::from_lookup(|_| None), ..Default::default() };
        let (server, mut events) = BridgeServer::start(opts).await.unwrap();
        let server = Rc::new(server);
        let mut routes = Vec::new();
        let mut run_index = HashMap::new();
        for i in 0..RUNS {
            let route = server.add_run(&defs).await.unwrap().unwrap();
            run_index.insert(route.run_id.clone(), i);
            routes.push(route);
        }

        // pi's side: answer every call with a text naming the run its route belongs to and the
        // call's own `k`.
        let pi = {
            let server = server.clone();
            tokio::task::spawn_local(async move {
                let mut seen = Vec::new();
                while seen.len() < RUNS * CALLS {
                    let Some(BridgeEvent::Call { run_id, pi_call_id, pi_tool, args }) = events.recv().await else {
                        panic!("unexpected bridge event or end");
                    };
                    assert_eq!(pi_tool, "sem_reindex");
                    let i = run_index[&run_id];
                    assert_eq!(args["run"], json!(i), "call of run {} reached run {i}", args["run"]);
                    let text = format!("run {i} k {}", args["k"]);
                    server.pi_result(&pi_call_id, vec![json!({"type": "text", "text": text})], false).await.unwrap();
                    seen.push(pi_call_id);
                }
                (seen, events)
            })
        };

        let job = json!({"urls": routes.iter().map(|r| r.url.clone()).collect::<Vec<_>>(), "calls_per_run": CALLS});
        let client = tokio::task::spawn_blocking(move || {
            let mut cmd = Command::new(python);
            cmd.arg(client_script()).arg("load");
            common::run_with_timeout(&mut cmd, Some(job.to_string().as_bytes()), Duration::from_secs(600))
        });
        let finished = client.await.unwrap().unwrap();
        assert_eq!(finished.code, Some(0), "client stderr: {}", finished.stderr);
        let report: Value = serde_json::from_str(finished.stdout.trim()).unwrap();
        let results = report["results"].as_array().unwrap();
        assert_eq!(results.len(), RUNS * CALLS);
        let mut answered = HashSet::new();
        for r in results {
            assert!(r.get("error").is_none(), "{r}");
            assert_eq!(r["isError"], false, "{r}");
            assert_eq!(text_of(r), format!("run {} k {}", r["run"], r["k"]), "a mismatched result");
            assert!(answered.insert((r["run"].as_u64(), r["k"].as_u64())), "answered twice: {r}");
        }
        let (seen, mut events) = pi.await.unwrap();
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), RUNS * CALLS, "a pi call id was dispatched twice");
        assert!(events.try_recv().is_err(), "an extra bridge event");

        // A result for an answered call is refused.
        assert!(server.pi_result(&seen[0], vec![], false).await.is_err());
        // Dispose one run: its route answers 410, the others still serve; a wrong token is 404.
        server.dispose_run(&routes[0].run_id).await.unwrap();
        let addr = server.local_addr();
        let path = |url: &str| url[url.find("/cursor-pi-tool-bridge/").unwrap()..].to_owned();
        let (gone, live) = (path(&routes[0].url), path(&routes[1].url));
        let statuses = tokio::task::spawn_blocking(move || {
            (http_post(addr, &gone).0, http_post(addr, &live).0, http_post(addr, "/cursor-pi-tool-bridge/ffff/mcp").0)
        })
        .await
        .unwrap();
        assert_eq!(statuses, (410, 200, 404));
        server.shutdown().await;
    });
}
