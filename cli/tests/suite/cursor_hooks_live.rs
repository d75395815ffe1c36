//! Cursor hooks live, played the way Cursor runs them (SPEC §1.5): `install cursor` into a
//! temporary HOME, then for each payload of a recorded session, in order, the command
//! `hooks.json` names for its event runs with the payload on stdin, one process per event. The
//! answers, what a real collector (rotel) and real pi then hold, the spool's status, `uninstall`
//! leaving `hooks.json` byte for byte as it was, and the faults: a collector that is down, input
//! that is not JSON, an unknown event, a 20 MB payload, a spool that cannot be written.
//! Without rotel or pi, the parts that need them skip (except under `./scripts/test`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cursor::{hook_log_holds, payloads};
use common::otel::{check_subagent_nesting, rotel_agent, Collector, Span};
use common::pi::{pi_command, pi_rpc, pi_sessions_of, PI_TIMEOUT};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_toolstream");
const SESSION: &str = "cursor-hooks/cursor-hooks.jsonl";
/// The recorded session's workspace (its `workspace_roots[0]`); played here, it is a folder of
/// the temporary HOME (pi opens a session only where its working directory exists).
const RECORDED_WORKSPACE: &str = "/Users/user/Desktop/langsmith-cli";
const WAIT: Duration = Duration::from_secs(90);
/// A user's own `hooks.json`, which install and uninstall must leave as it was.
const USERS_HOOKS: &str = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"preToolUse\": [\n      { \"type\": \"command\", \"matcher\": \"Shell\", \"command\": \"./audit.sh\" }\n    ],\n    \"stop\": [ {\"command\":\"./notify.sh\"} ]\n  }\n}\n";

/// A temporary HOME with the user's own hooks.
struct Home {
    home: PathBuf,
}

impl Home {
    fn new() -> Home {
        let home = common::tempdir();
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::write(home.join(".cursor/hooks.json"), USERS_HOOKS).unwrap();
        Home { home }
    }

    fn hooks_json(&self) -> String {
        std::fs::read_to_string(self.home.join(".cursor/hooks.json")).unwrap()
    }

    /// The environment Cursor gives its hooks here: this HOME and nothing of the tester's own.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("HOME", &self.home)
            .current_dir(&self.home)
            .env_remove("XDG_STATE_HOME")
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("TOOLSTREAM_CONFIG")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL");
        cmd
    }

    fn toolstream(&self, args: &[&str]) -> common::Finished {
        let mut cmd = self.command(BIN);
        cmd.args(args);
        common::run_with_timeout(&mut cmd, None, WAIT).unwrap()
    }

    fn state(&self) -> PathBuf {
        self.home.join(".local/state/toolstream/cursor-hooks")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.state().join("hook.log")).unwrap_or_default()
    }

    /// Run the command `hooks.json` names for `payload`'s event with the payload on stdin, as
    /// Cursor does (through the shell, one process); `None` when no hook of toolstream's is
    /// installed for that event. The answer's text.
    fn fire(&self, payload: &[u8], event: &str) -> Option<String> {
        let hooks: Value = serde_json::from_str(&self.hooks_json()).unwrap();
        let command = hooks["hooks"][event]
            .as_array()?
            .iter()
            .filter_map(|e| e["command"].as_str())
            .find(|c| c.contains(" hook cursor"))?
            .to_owned();
        let mut cmd = self.command("/bin/sh");
        cmd.args(["-c", &command]);
        let out = common::run_with_timeout(&mut cmd, Some(payload), Duration::from_secs(30)).unwrap();
        assert_eq!(out.code, Some(0), "{event}: {}", out.stderr);
        let text = out.stdout.trim().to_owned();
        assert!(text.is_empty() || serde_json::from_str::<Value>(&text).is_ok(), "{event}: not JSON: {text}");
        Some(text)
    }

    /// The workspace the session is played in.
    fn workspace(&self) -> PathBuf {
        let w = self.home.join("langsmith-cli");
        std::fs::create_dir_all(&w).unwrap();
        w
    }

    /// Play every payload of `file` (its workspace moved to [`Home::workspace`]); the answers.
    fn play(&self, file: &Path) -> Vec<String> {
        let workspace = self.workspace().display().to_string();
        payloads(file)
            .iter()
            .filter_map(|p| {
                let text = p.to_string().replace(RECORDED_WORKSPACE, &workspace);
                self.fire(text.as_bytes(), p["hook_event_name"].as_str().unwrap())
            })
            .collect()
    }

    fn status(&self) -> Value {
        let out = self.toolstream(&["hooks", "status", "--json"]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        serde_json::from_str(out.stdout.trim()).unwrap()
    }
}

/// Wait (bounded) until `done` holds.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn kind<'a>(spans: &'a [Span], op: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some(op)).collect()
}

fn pending(status: &Value, sink: &str) -> u64 {
    status["pending"][sink].as_u64().unwrap_or(0)
}

#[test]
fn live_as_cursor_does_it_every_turn_reaches_a_collector_and_pi() {
    let Some(file) = toolstream_testkit::fixture(SESSION) else { return };
    let Some(agent) = rotel_agent() else { return };
    let (turns, calls) = hook_log_holds(&file);
    let collector = Collector::start(&agent);
    let h = Home::new();
    let otlp = format!("otlp={}", collector.http_url());
    let install = h.toolstream(&["install", "cursor", "--launcher", BIN, "--sink", &otlp, "--sink", "pi-sessions"]);
    assert_eq!(install.code, Some(0), "{}", install.stderr);
    let doctor = h.toolstream(&["doctor", "cursor"]);
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);

    let answers = h.play(&file);
    assert!(answers.len() >= 90, "every installed event was answered: {}", answers.len());
    assert!(answers.iter().all(|a| a == "{}"), "an observer answers neutrally: {answers:?}");

    // The collector: one invoke_agent span per turn, one execute_tool span per call, the
    // failed call with error status.
    let mut spans = Vec::new();
    until("spans", || {
        spans = collector.spans();
        kind(&spans, "invoke_agent").len() >= turns && kind(&spans, "execute_tool").len() >= calls
    });
    std::thread::sleep(Duration::from_millis(500));
    spans = collector.spans();
    assert_eq!(kind(&spans, "invoke_agent").len(), turns, "one span per turn, each once");
    let tools = kind(&spans, "execute_tool");
    assert_eq!(tools.len(), calls, "one span per call, each once");
    let failed: Vec<&&Span> = tools.iter().filter(|s| s.status == "STATUS_CODE_ERROR").collect();
    assert_eq!(failed.len(), 1, "the one postToolUseFailure");
    assert_eq!(failed[0].attr("gen_ai.tool.name"), Some("read"));
    // Delivered by separate processes, the subagent's run is still one trace with the turn of
    // its task call, under that call's span; every turn names its conversation and Cursor build.
    let conversation = payloads(&file)[0]["conversation_id"].as_str().unwrap().to_owned();
    check_subagent_nesting(&spans, &conversation, "live");
    assert!(kind(&spans, "invoke_agent").iter().all(|r| r.attr("cursor.version") == Some("3.7.19")));

    // pi: one session for the conversation, in pi's own list for the workspace, with every prompt.
    let prompts: Vec<String> = payloads(&file)
        .iter()
        .filter(|p| p["hook_event_name"] == "beforeSubmitPrompt")
        .map(|p| p["prompt"].as_str().unwrap().to_owned())
        .collect();
    let agent_dir = h.home.join(".pi/agent");
    until("pi session", || pending(&h.status(), "pi-sessions") == 0 && agent_dir.join("sessions").exists());
    common::each_pi(|pi| {
        let workspace = h.workspace();
        let listed = pi_sessions_of(pi, &agent_dir, workspace.to_str().unwrap(), PI_TIMEOUT);
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["firstMessage"], prompts[0].as_str());
        let id = listed[0]["id"].as_str().unwrap();
        let mut cmd = pi_command(&pi.bin(), &h.home.join(".pi"));
        cmd.current_dir(&workspace).args(["--mode", "rpc", "--session", id]);
        let res =
            pi_rpc(cmd, &[json!({"id": "state", "type": "get_state"}), json!({"id": "m", "type": "get_messages"})]);
        assert_eq!(res["state"]["data"]["sessionId"], id, "{}", res["state"]);
        let users: Vec<&str> = res["m"]["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"][0]["text"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(users, prompts, "pi holds every prompt, in order");
    });

    let status = h.status();
    assert_eq!(status["pending"], json!({}), "nothing pending: {status}");
    let uninstall = h.toolstream(&["uninstall", "cursor"]);
    assert_eq!(uninstall.code, Some(0), "{}", uninstall.stderr);
    assert_eq!(h.hooks_json(), USERS_HOOKS, "hooks.json byte for byte as before");
}

#[test]
fn turns_spooled_while_the_collector_was_down_arrive_at_the_next_delivery() {
    let Some(file) = toolstream_testkit::fixture(SESSION) else { return };
    let Some(agent) = rotel_agent() else { return };
    let (turns, _) = hook_log_holds(&file);
    let (http, grpc) = Collector::ports();
    let h = Home::new();
    let otlp = format!("otlp=http://127.0.0.1:{http}");
    let sessions = h.home.join("sessions");
    let pis = format!("pi-sessions={}", sessions.display());
    let install = h.toolstream(&["install", "cursor", "--launcher", BIN, "--sink", &otlp, "--sink", &pis]);
    assert_eq!(install.code, Some(0), "{}", install.stderr);
    let doctor = h.toolstream(&["doctor", "cursor"]);
    assert_eq!(doctor.code, Some(1), "the collector is down: {}", doctor.stdout);
    assert!(doctor.stdout.contains("no collector at"), "{}", doctor.stdout);
    h.play(&file);
    // The other sink is served; the collector's turns are pending, and the log says why.
    until("pi-sessions delivered", || pending(&h.status(), "pi-sessions") == 0);
    until("the failed delivery logged", || h.log().contains(&format!("{otlp}: ")));
    let status = h.status();
    assert_eq!(pending(&status, &otlp), turns as u64, "every turn pending for the collector: {status}");
    let text = h.toolstream(&["hooks", "status"]);
    assert!(text.stdout.contains(&format!("pending: {turns} turn(s) not yet delivered to {otlp}")), "{}", text.stdout);

    // The collector comes back: the next delivery brings every turn, once.
    let collector = Collector::start_on(&agent, http, grpc);
    let deliver = h.toolstream(&["hooks", "deliver"]);
    assert_eq!(deliver.code, Some(0), "{}{}", deliver.stdout, deliver.stderr);
    until("spans", || kind(&collector.spans(), "invoke_agent").len() >= turns);
    until("nothing pending", || pending(&h.status(), &otlp) == 0);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(kind(&collector.spans(), "invoke_agent").len(), turns);
}

#[test]
fn bad_input_gets_the_neutral_answer_and_a_line_in_the_log() {
    let h = Home::new();
    let pis = format!("pi-sessions={}", h.home.join("sessions").display());
    let install = h.toolstream(&["install", "cursor", "--launcher", BIN, "--no-compact", "--sink", &pis]);
    assert_eq!(install.code, Some(0), "{}", install.stderr);
    let base = json!({"conversation_id": "c-1", "generation_id": "g-1", "model": "default"});
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v.to_string().into_bytes()
    };

    assert_eq!(h.fire(b"this is not json", "stop").as_deref(), Some("{}"));
    assert!(h.log().contains("not JSON"), "{}", h.log());

    let unknown = with(json!({"hook_event_name": "afterSomethingNew"}));
    assert_eq!(h.fire(&unknown, "stop").as_deref(), Some("{}"));
    assert!(h.log().contains("unknown event afterSomethingNew"), "{}", h.log());

    let big = with(json!({"hook_event_name": "postToolUse", "tool_name": "Shell", "tool_input": {"command": "yes"},
        "tool_use_id": "t", "tool_output": "y\n".repeat(10 * 1024 * 1024)}));
    assert!(big.len() > 20 * 1024 * 1024);
    assert_eq!(h.fire(&big, "postToolUse").as_deref(), Some("{}"));
    assert!(h.log().contains("cut short"), "{}", h.log());
    let spool = h.state().join("spool/c-1.jsonl");
    assert!(std::fs::metadata(&spool).unwrap().len() < 1024 * 1024, "the spool keeps a bounded record");

    // A spool that cannot be written: its folder read-only (a non-root user), or not a folder at
    // all (root ignores permission bits).
    let spool_dir = h.state().join("spool");
    std::fs::remove_dir_all(&spool_dir).unwrap();
    let root = runs_as_root(&h);
    if root {
        std::fs::write(&spool_dir, b"not a folder").unwrap();
    } else {
        std::fs::create_dir_all(&spool_dir).unwrap();
        set_mode(&spool_dir, 0o500);
    }
    let stop = with(json!({"hook_event_name": "stop", "status": "completed"}));
    assert_eq!(h.fire(&stop, "stop").as_deref(), Some("{}"));
    assert!(h.log().contains("cannot spool a stop event"), "{}", h.log());
    if !root {
        set_mode(&spool_dir, 0o700);
    }
}

/// Whether the tests run as root (files the owner cannot write are then still writable).
fn runs_as_root(h: &Home) -> bool {
    let probe = h.home.join("root-probe");
    std::fs::write(&probe, b"x").unwrap();
    set_mode(&probe, 0o400);
    let writable = std::fs::OpenOptions::new().append(true).open(&probe).is_ok();
    set_mode(&probe, 0o600);
    writable
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
