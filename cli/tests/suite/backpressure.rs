//! Per-sink backpressure on the real binary: a `drop_newest` sink that nobody reads never holds
//! back the others, and the exit summary gives the exact number it dropped (exit status 1: a sink
//! lost events); a `block` sink that
//! nobody reads stalls the run (as documented) and Ctrl-C still exits 130 with every other sink
//! flushed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// The demo, `n` times over (distinct runs of the same session, one file each).
fn inputs(n: usize) -> Vec<String> {
    let demo = common::example("demo.jsonl").display().to_string();
    vec![demo; n]
}

/// Output events the engine produces for these inputs (`stats --json`).
fn output_events(files: &[String]) -> u64 {
    let mut args = vec!["stats", "--json"];
    args.extend(files.iter().map(String::as_str));
    let run = common::toolstream(&args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    v["output_events"].as_u64().unwrap()
}

fn spawn(args: &[String]) -> Child {
    common::spawn_toolstream(args, Stdio::null())
}

/// Wait for the child at most `limit` (failing past that). Returns (code, stdout, stderr).
fn wait(child: Child, limit: Duration) -> (Option<i32>, String, String) {
    match common::finish_with_timeout(child, limit) {
        Ok(f) => (f.code, f.stdout, f.stderr),
        Err(stderr) => panic!("toolstream did not exit within {limit:?}: {stderr}"),
    }
}

/// The pi session file holds every run's messages (it was written whole).
fn session_messages(path: &PathBuf) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == "message").count()
}

#[test]
fn a_drop_newest_sink_nobody_reads_never_holds_back_the_others() {
    let dir = common::tempdir();
    let fifo = dir.join("nobody-reads");
    mkfifo(&fifo);
    let files = inputs(100);
    let expected = output_events(&files);
    let session = dir.join("s.jsonl");
    let mut args: Vec<String> = ["replay", "--color", "never", "--sink", "cards"].map(String::from).to_vec();
    args.push("--sink".into());
    args.push(format!("pi-session={}", session.display()));
    args.push("--sink".into());
    args.push(format!("jsonl={},when_full=drop_newest", fifo.display()));
    args.extend(files.iter().cloned());
    let (code, stdout, stderr) = wait(spawn(&args), Duration::from_secs(60));
    assert_eq!(code, Some(1), "counted drops are still losses: {stderr}");
    // The other sinks completed: every run's cards, and a pi session with every run in it.
    assert_eq!(stdout.matches("── finished").count(), 100);
    assert!(session_messages(&session) >= 100 * 3, "the pi session holds every run");
    // Nothing was ever written to the FIFO: every event offered to it was dropped, and counted.
    let line = stderr.lines().find(|l| l.contains("sink jsonl=")).unwrap_or_else(|| panic!("no summary: {stderr}"));
    let dropped: u64 = line
        .split(": ")
        .nth(2)
        .and_then(|rest| rest.split(' ').next())
        .map(|n| n.replace(',', "").parse().unwrap())
        .unwrap();
    assert_eq!(dropped, expected, "{line}");
    assert!(line.contains("events dropped (") && line.contains("on a full queue"), "{line}");
}

#[test]
fn a_block_sink_nobody_reads_stalls_the_run_and_ctrl_c_still_exits_130_with_the_others_flushed() {
    let dir = common::tempdir();
    let fifo = dir.join("stalled");
    mkfifo(&fifo);
    // A reader that opens the FIFO and never reads: the sink's writes block once the pipe's
    // buffer is full (the trace of 40 demo runs is well over its 64 KiB).
    let _reader = std::fs::OpenOptions::new().read(true).custom_flags_nonblocking().open(&fifo).unwrap();
    let files = inputs(40);
    let session = dir.join("s.jsonl");
    let mut args: Vec<String> = ["replay", "--color", "never"].map(String::from).to_vec();
    args.push("--sink".into());
    args.push("cards".into());
    args.push("--sink".into());
    args.push(format!("pi-session={}", session.display()));
    args.push("--sink".into());
    args.push(format!("jsonl={}", fifo.display()));
    args.extend(files.iter().cloned());
    let child = spawn(&args);
    let pid = child.id();
    // Blocked, as documented: still running well after a free run would have ended.
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(sent.success());
    let (code, stdout, stderr) = wait(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stdout.matches("── finished").count() < 40, "the run was held back by the blocked sink");
    // Flushed: the cards end with a whole run (the last one closed, or cancelled by Ctrl-C).
    assert!(stdout.matches("── finished").count() >= 1, "{stdout}");
    assert!(stdout.trim_end().ends_with("──"), "the cards end with a run's closing line: {stdout}");
    assert!(session_messages(&session) >= 1, "the pi session was flushed");
    assert!(stderr.contains(&format!("sink jsonl={}", fifo.display())), "{stderr}");
}

/// Open flags for a FIFO reader that must not wait for a writer.
trait NonBlocking {
    fn custom_flags_nonblocking(&mut self) -> &mut Self;
}

impl NonBlocking for std::fs::OpenOptions {
    fn custom_flags_nonblocking(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening the read end returns at once.
        self.custom_flags(0o4000)
    }
}
