//! Real pi, driven the one way every pi test drives it: [`pi_command`] (pi offline, its agent
//! folder in a home of the test's), [`print_json`] (print mode, its JSON events), [`Rpc`] (RPC
//! mode, events read as they come, every wait bounded by [`PI_TIMEOUT`] unless a test says
//! less), [`pi_rpc`] (a batch of RPC commands, stdin then closed) and [`pi_sessions_of`] (pi's own
//! session listing).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{run_with_timeout, wait_or_kill, Finished, Pi};

/// How long one real pi may take.
pub const PI_TIMEOUT: Duration = Duration::from_secs(60);

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
pub fn pi_rpc(mut cmd: Command, commands: &[Value]) -> HashMap<String, Value> {
    let input: String = commands.iter().map(|c| format!("{c}\n")).collect();
    let out = run_with_timeout(&mut cmd, Some(input.as_bytes()), PI_TIMEOUT).unwrap();
    let mut by_id = HashMap::new();
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

/// What pi printed in print mode (`--mode json`): its events, and its stderr.
pub struct PiRun {
    pub events: Vec<Value>,
    pub stderr: String,
}

impl PiRun {
    /// The last message of the run (its `agent_end`).
    pub fn last_message(&self) -> Value {
        let end = self.events.iter().rev().find(|e| e["type"] == "agent_end").expect("an agent_end");
        end["messages"].as_array().unwrap().last().unwrap().clone()
    }
}

/// `pi --mode json -p PROMPT` within [`PI_TIMEOUT`]; an error when pi fails or prints a line that
/// is not JSON.
pub fn print_json(mut cmd: Command, prompt: &str) -> Result<PiRun, String> {
    cmd.args(["--mode", "json", "-p", prompt]);
    let Finished { code, stdout, stderr } = run_with_timeout(&mut cmd, None, PI_TIMEOUT)?;
    if code != Some(0) {
        return Err(format!("pi exited {code:?}: {stderr}"));
    }
    let events = stdout
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("pi printed a non-JSON line ({e}): {l}")))
        .collect::<Result<_, _>>()?;
    Ok(PiRun { events, stderr })
}

/// pi in RPC mode (`--mode rpc`), its events read as they come; killed when dropped.
pub struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    /// Events read while waiting for another one, in order.
    seen: VecDeque<Value>,
}

impl Rpc {
    pub fn start(mut cmd: Command) -> Rpc {
        cmd.args(["--mode", "rpc"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Rpc { child, stdin, events, seen: VecDeque::new() }
    }

    /// pi's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().expect("pi's input is open");
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// The first event, seen or to come within [`PI_TIMEOUT`], that `what` accepts; events before
    /// it are dropped, events read past it are kept for the next wait.
    pub fn until(&mut self, what: impl Fn(&Value) -> bool) -> Value {
        self.until_within(what, PI_TIMEOUT)
    }

    /// [`Rpc::until`] within `timeout`.
    pub fn until_within(&mut self, what: impl Fn(&Value) -> bool, timeout: Duration) -> Value {
        if let Some(i) = self.seen.iter().position(&what) {
            self.seen.drain(..i);
            return self.seen.pop_front().unwrap();
        }
        self.seen.clear();
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = self.events.recv_timeout(left).unwrap_or_else(|_| panic!("no such event from pi in {timeout:?}"));
            if what(&e) {
                return e;
            }
        }
    }

    /// The events from the first that `first` accepts to the next that `last` accepts, both
    /// included (events before `first` are dropped), each wait within [`PI_TIMEOUT`].
    pub fn events_between(&mut self, first: impl Fn(&Value) -> bool, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = vec![self.until(first)];
        while !events.last().is_some_and(&last) {
            let next = match self.seen.pop_front() {
                Some(e) => e,
                None => self.events.recv_timeout(PI_TIMEOUT).expect("pi's next event in time"),
            };
            events.push(next);
        }
        events
    }

    /// Like `until`, but the events read past are kept whether or not they matched.
    pub fn find(&mut self, what: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&what) {
            return self.seen.remove(i).unwrap();
        }
        let deadline = Instant::now() + PI_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = self.events.recv_timeout(left).expect("pi answered in time");
            if what(&e) {
                return e;
            }
            self.seen.push_back(e);
        }
    }

    /// A command and its response.
    pub fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = json!(id);
        self.send(command);
        let r = self.find(|e| e["type"] == "response" && e["id"] == id);
        assert_eq!(r["success"], true, "{r}");
        r
    }

    /// A prompt, run to its end; the last message.
    pub fn prompt(&mut self, id: &str, text: &str) -> Value {
        self.call(id, json!({"type": "prompt", "message": text}));
        let end = self.until(|e| e["type"] == "agent_end");
        end["messages"].as_array().unwrap().last().unwrap().clone()
    }

    /// A slash command whose answer is a notification; its text.
    pub fn notification(&mut self, id: &str, command: &str) -> String {
        self.call(id, json!({"type": "prompt", "message": command}));
        let n = self.find(|e| e["type"] == "extension_ui_request" && e["method"] == "notify");
        n["message"].as_str().unwrap().to_owned()
    }

    /// Close pi's input and wait up to `timeout` for it to exit: its exit code (`Some(None)`
    /// for a signal), or `None` when it had to be killed.
    pub fn close(&mut self, timeout: Duration) -> Option<Option<i32>> {
        self.stdin = None;
        wait_or_kill(&mut self.child, timeout)
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
