//! Shared helpers for the engine's integration tests: locating the shared fixtures (tests skip
//! when `../shared` is absent, except under `./scripts/test`), running the real `toolstream` binary, and collecting the
//! output events of a replay through the library, and running other programs (pi) with a timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod cursor;
pub mod http;
pub mod otel;
pub mod pi;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output as ProcOutput, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolstream_engine::pipeline::{Pipeline, PipelineOptions, Stats};
use toolstream_engine::source::Source;
use toolstream_schemas::OutputEvent;
use toolstream_sinks::{Sink, SinkError};
use toolstream_testkit::Tool;

/// The project's Python (`.venv`, by `scripts/install-py`) when it imports every module of
/// `imports` (`"mcp.client.streamable_http"`, `"openai"`, `"pytest"`), or `None` — the skip
/// reported, or a failure where Python is required (`toolstream_testkit::require`).
pub fn python(imports: &[&str]) -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let probe = Command::new(&python).args(["-c", &format!("import {}", imports.join(", "))]).output();
    let present = probe.is_ok_and(|o| o.status.success());
    let what = format!("{} with {}", python.display(), imports.join(", "));
    toolstream_testkit::require(Tool::Py, present, &what).then_some(python)
}

/// Compares `out` with its reviewed snapshot, `tests/suite/snapshots/<file>__<name>.snap`: the
/// name each golden had when every test file was its own binary, so the goldens keep theirs.
pub fn assert_golden(file: &str, name: &str, out: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/snapshots"));
    settings.bind(|| insta::assert_snapshot!(&*format!("{file}__{name}"), out));
}

/// `../shared/fixtures/cursor-cli`, or `None` when absent (a failure under `./scripts/test`, see
/// `toolstream_testkit`).
pub fn cli_fixtures() -> Option<PathBuf> {
    toolstream_testkit::fixture("cursor-cli")
}

/// One named capture of `../shared/fixtures/cursor-cli`, or `None` when absent (a failure under
/// `./scripts/test`).
pub fn cli_capture(name: &str) -> Option<PathBuf> {
    toolstream_testkit::fixture(&format!("cursor-cli/{name}"))
}

/// Every `.jsonl` capture in the fixtures folder, sorted.
pub fn cli_captures() -> Vec<PathBuf> {
    toolstream_testkit::fixture_files("cursor-cli", "jsonl")
}

pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)
}

pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Run the real binary with `args`, feeding `stdin` when given.
pub fn toolstream(args: &[&str], stdin: Option<&[u8]>) -> Run {
    toolstream_env(args, stdin, &[])
}

/// Start `toolstream <args>` with stdout and stderr piped and stdin as given (piped: the caller
/// writes the live input; null: none).
pub fn spawn_toolstream<S: AsRef<std::ffi::OsStr>>(args: &[S], stdin: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// [`toolstream`] with extra environment variables.
pub fn toolstream_env(args: &[&str], stdin: Option<&[u8]>, vars: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.envs(vars.iter().copied());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().unwrap();
    if let Some(bytes) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        // Write on a thread so a large input cannot deadlock against a full stdout pipe.
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        let out: ProcOutput = child.wait_with_output().unwrap();
        writer.join().unwrap();
        return Run::from(out);
    }
    Run::from(child.wait_with_output().unwrap())
}

impl From<ProcOutput> for Run {
    fn from(o: ProcOutput) -> Self {
        Run {
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
            code: o.status.code().unwrap_or(-1),
        }
    }
}

/// A sink that keeps every event it is given.
#[derive(Clone, Default)]
pub struct Collect(pub Arc<Mutex<Vec<OutputEvent>>>);

impl Sink for Collect {
    fn name(&self) -> &'static str {
        "collect"
    }
    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        self.0.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Replay files through the library and return every output event and the stats.
pub fn collect(files: &[&Path]) -> (Vec<OutputEvent>, Stats) {
    let sink = Collect::default();
    let mut p = Pipeline::new(PipelineOptions::default(), vec![Box::new(sink.clone())]).unwrap();
    for f in files {
        p.run_source(&Source::File(f.to_path_buf()), &mut |_| {}).unwrap();
    }
    let stats = p.finish();
    let events = std::mem::take(&mut *sink.0.lock().unwrap());
    (events, stats)
}

/// Replay bytes (written to a temp file) through the library.
pub fn collect_bytes(bytes: &[u8]) -> (Vec<OutputEvent>, Stats) {
    let dir = tempdir();
    let path = dir.join("input.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let out = collect(&[&path]);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// A fresh temporary directory under the target dir.
pub fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolstream-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One real pi the tests run against: a line of `scripts/pi-versions`, installed by
/// `scripts/install-pi` into `.deps/pi-<version>` with the node that runs it.
#[derive(Clone, Debug)]
pub struct Pi {
    /// The npm package (`@mariozechner/pi-coding-agent` up to 0.73, `@earendil-works/…` after).
    pub package: String,
    pub version: String,
    /// The install prefix, `.deps/pi-<version>`.
    pub dir: PathBuf,
}

impl Pi {
    /// The launcher: runs this pi with its node (first on PATH for whatever pi starts).
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin/pi")
    }

    /// The node that runs this pi (system node when recent enough, else the project-local one).
    pub fn node(&self) -> PathBuf {
        self.dir.join("bin/node")
    }

    /// The installed package (its `dist/index.js` is pi's library).
    pub fn package_dir(&self) -> PathBuf {
        self.dir.join("node_modules").join(&self.package)
    }
}

impl std::fmt::Display for Pi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pi {}", self.version)
    }
}

/// Every pi of `scripts/pi-versions` that is installed. A missing one is skipped with a note —
/// except under `scripts/test`, which sets `TOOLSTREAM_REQUIRE_PI`: there, absence is a failure.
pub fn pis() -> Vec<Pi> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let list = std::fs::read_to_string(root.join("scripts/pi-versions")).unwrap();
    let mut found = Vec::new();
    for line in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let (Some(package), Some(version)) = (words.next(), words.next()) else {
            panic!("scripts/pi-versions: not `package version`: {line}")
        };
        let pi = Pi {
            package: package.into(),
            version: version.into(),
            dir: root.join(".deps").join(format!("pi-{version}")),
        };
        if toolstream_testkit::require(Tool::Pi, pi.bin().exists(), &pi.bin().display().to_string()) {
            found.push(pi);
        }
    }
    found
}

/// Run `check` against every installed pi (see [`pis`]), each to the end even when an earlier
/// one failed; then fail naming the versions that failed.
pub fn each_pi(check: impl Fn(&Pi)) {
    let mut failed = Vec::new();
    for pi in pis() {
        eprintln!("== {pi}");
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&pi))).is_err() {
            failed.push(pi.to_string());
        }
    }
    assert!(failed.is_empty(), "failed with {} (see the panic messages above)", failed.join(", "));
}

/// Every fixture capture (when ../shared is present), then the project's examples.
pub fn captures_and_examples() -> Vec<PathBuf> {
    let mut all = cli_captures();
    all.push(example("demo.jsonl"));
    all.push(example("sdk-demo.jsonl"));
    all
}

/// A capture's short name (file stem).
pub fn name(p: &Path) -> String {
    p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// How a program run by [`run_with_timeout`] ended.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run to completion within `timeout`, killing the process when it takes longer.
pub fn run_with_timeout(cmd: &mut Command, stdin: Option<&[u8]>, timeout: Duration) -> Result<Finished, String> {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(bytes);
    }
    finish_with_timeout(child, timeout)
        .map_err(|stderr| format!("{cmd:?} timed out after {timeout:?}; stderr: {stderr}"))
}

/// Collect a started child's stdout and stderr (both piped) until it exits within `timeout`;
/// past that, kill it and return its stderr as the error.
pub fn finish_with_timeout(mut child: Child, timeout: Duration) -> Result<Finished, String> {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = wait_or_kill(&mut child, timeout);
    let (stdout, stderr) = (reader.join().unwrap_or_default(), err_reader.join().unwrap_or_default());
    match code {
        Some(code) => Ok(Finished { code, stdout, stderr }),
        None => Err(stderr),
    }
}

/// `Some(exit code)` when the child exits in time; otherwise kill it and return `None`.
pub fn wait_or_kill(child: &mut Child, timeout: Duration) -> Option<Option<i32>> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.code()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Rebuild each message from its streamed events the way the provider's consumer does (start
/// from `start.partial`, apply each event at its `contentIndex`) and check it against the terminal
/// message; returns the terminal messages and tool results in stream order.
pub fn rebuild_stream(lines: &[Value]) -> Result<Vec<Value>, String> {
    let mut delivered = Vec::new();
    let mut partial: Option<Value> = None;
    let mut args_json: std::collections::HashMap<usize, String> = Default::default();
    for l in lines {
        let t = l["type"].as_str().ok_or("line without type")?;
        if t == "tool_results" {
            delivered.extend(l["results"].as_array().ok_or("no results")?.iter().cloned());
            continue;
        }
        if t == "start" {
            if partial.is_some() {
                return Err("start inside a message".into());
            }
            partial = Some(l["partial"].clone());
            continue;
        }
        let p = partial.as_mut().ok_or_else(|| format!("{t} outside a message"))?;
        let content = p["content"].as_array_mut().unwrap();
        let i = l["contentIndex"].as_u64().map(|i| i as usize);
        match t {
            "text_start" => content.push(json!({"type": "text", "text": ""})),
            "thinking_start" => content.push(json!({"type": "thinking", "thinking": ""})),
            "toolcall_start" => content.push(l["toolCall"].clone()),
            "text_delta" | "thinking_delta" => {
                let key = if t == "text_delta" { "text" } else { "thinking" };
                let b = &mut content[i.unwrap()][key];
                *b = Value::from(format!("{}{}", b.as_str().unwrap(), l["delta"].as_str().unwrap()));
            }
            "toolcall_delta" => args_json.entry(i.unwrap()).or_default().push_str(l["delta"].as_str().unwrap()),
            "text_end" | "thinking_end" => {
                let key = if t == "text_end" { "text" } else { "thinking" };
                if content[i.unwrap()][key] != l["content"] {
                    return Err(format!("{t} content differs from its deltas"));
                }
            }
            "toolcall_end" => {
                let parsed: Value = serde_json::from_str(&args_json.remove(&i.unwrap()).unwrap_or_default())
                    .map_err(|e| format!("toolcall_delta is not JSON: {e}"))?;
                if parsed != l["toolCall"]["arguments"] {
                    return Err("toolcall_end arguments differ from the delta".into());
                }
                content[i.unwrap()] = l["toolCall"].clone();
            }
            "done" | "error" => {
                let m = if t == "done" { &l["message"] } else { &l["error"] };
                if m["content"] != p["content"] || m["stopReason"] != l["reason"] {
                    return Err(format!("terminal message differs from the rebuilt one: {m}"));
                }
                delivered.push(m.clone());
                partial = None;
            }
            other => return Err(format!("unknown event {other}")),
        }
    }
    if partial.is_some() {
        return Err("a message never ended".into());
    }
    Ok(delivered)
}
