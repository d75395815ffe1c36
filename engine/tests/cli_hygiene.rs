//! Terminal hygiene of the real binary: untrusted text never reaches the terminal with raw escape
//! sequences or control characters, a closed stdout (`| head`) ends quietly instead of with a sink
//! error or a panic, and logs carry no ANSI escapes when stderr is not a terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const SESSION: &str = "0c7e5a31-9d2b-4f60-8a1e-5b3c7d9f2e41";

/// One Cursor CLI run whose prompt, model, thinking, text and tool output carry escape sequences
/// (OSC title, clear screen, SGR), `\r`, BEL, other C0/C1 controls and U+2028/2029.
fn hostile_run() -> Vec<u8> {
    let evil = "A\x1b]0;PWNED\x07B\x1b[2JC\rD\x08E\x7fF\u{85}G\u{9b}31mH\u{2028}I\u{2029}J\x1bPdcs\x1b\\K";
    let call = "call-hygiene-1\nfc_hygiene_1";
    let shell_args = json!({"command": "make test", "workingDirectory": "", "timeout": 1000});
    let lines = vec![
        json!({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/home/dev/x",
               "session_id": SESSION, "model": format!("model-{evil}"), "permissionMode": "default"}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text",
               "text": format!("please {evil} fix it\nsecond line")}]}, "session_id": SESSION}),
        json!({"type": "thinking", "subtype": "delta", "text": format!("think {evil}\nmore"),
               "session_id": SESSION, "timestamp_ms": 1_794_300_000_040_u64}),
        json!({"type": "thinking", "subtype": "completed", "session_id": SESSION,
               "timestamp_ms": 1_794_300_000_080_u64}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text",
               "text": format!("text {evil}\r\nend")}]}, "session_id": SESSION,
               "timestamp_ms": 1_794_300_000_100_u64}),
        json!({"type": "tool_call", "subtype": "started", "call_id": call,
               "tool_call": {"shellToolCall": {"args": shell_args}, "toolCallId": call},
               "session_id": SESSION, "timestamp_ms": 1_794_300_000_200_u64}),
        json!({"type": "tool_call", "subtype": "completed", "call_id": call,
               "tool_call": {"shellToolCall": {"args": shell_args, "result": {"success": {
                   "command": "make test", "workingDirectory": "", "exitCode": 0, "signal": "",
                   "stdout": format!("\x1b[32mok\x1b[0m 1\n{evil}\nprogress 10%\rprogress 100%\n\tdone"),
                   "stderr": "", "executionTime": 10, "interleavedOutput": ""}}}, "toolCallId": call},
               "session_id": SESSION, "timestamp_ms": 1_794_300_000_300_u64}),
        json!({"type": "result", "subtype": "success", "duration_ms": 300, "duration_api_ms": 300,
               "is_error": false, "result": format!("text {evil}"), "session_id": SESSION,
               "request_id": "hygiene"}),
    ];
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Every control character a terminal could act on, other than `\n`.
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            c != '\n' && (c.is_control() || c == '\u{2028}' || c == '\u{2029}') // C0, DEL, C1
        })
        .collect()
}

#[test]
fn untrusted_text_reaches_the_terminal_without_controls() {
    let input = hostile_run();
    for extra in [&[][..], &["--expanded"][..]] {
        let mut args = vec!["replay", "--color", "never", "-"];
        args.extend_from_slice(extra);
        let run = common::toolstream(&args, Some(&input));
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        let out = &run.stdout;
        // The run really rendered every part.
        for part in ["model-A", "please A", "text A", "think A", "make test"] {
            assert!(out.contains(part), "{extra:?}: {part} missing in\n{out}");
        }
        assert!(!out.contains('\x1b'), "{extra:?}: ESC in\n{out:?}");
        assert!(!out.contains('\r'), "{extra:?}: CR in\n{out:?}");
        assert!(!out.contains('\x07'), "{extra:?}: BEL in\n{out:?}");
        assert_eq!(controls(out), Vec::<char>::new(), "{extra:?}: controls in\n{out:?}");
        // Only the prompt's first line is shown, and the second never.
        assert!(!out.contains("second line"), "{out}");
    }
}

#[test]
fn with_colour_only_our_own_sgr_codes_are_escapes() {
    let ours = ["\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"];
    for extra in [&[][..], &["--expanded"][..]] {
        let mut args = vec!["replay", "--color", "always", "-"];
        args.extend_from_slice(extra);
        let run = common::toolstream(&args, Some(&hostile_run()));
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        let mut rest = run.stdout.clone();
        for code in ours {
            rest = rest.replace(code, "");
        }
        assert!(!rest.contains('\x1b'), "{extra:?}: foreign ESC in\n{:?}", run.stdout);
        assert_eq!(controls(&rest), Vec::<char>::new(), "{extra:?}: controls in\n{:?}", run.stdout);
    }
}

/// `examples/demo.jsonl` repeated under `copies` distinct session ids: a few hundred KB of cards.
fn big_input(copies: usize) -> Vec<u8> {
    let demo = std::fs::read_to_string(common::example("demo.jsonl")).unwrap();
    let session = "5f1c2a9e-7b3d-4e21-9c8a-2d6f0e4b1a77";
    assert!(demo.contains(session));
    let mut out = String::new();
    for i in 0..copies {
        out.push_str(&demo.replace(session, &format!("5f1c2a9e-7b3d-4e21-9c8a-{i:012x}")));
    }
    out.into_bytes()
}

fn wait_with_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("toolstream still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Exit 0, or death by SIGPIPE (141 in a shell), are both a quiet end of a closed pipe.
fn quiet_pipe_end(status: ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(13) {
            return true;
        }
    }
    matches!(status.code(), Some(0) | Some(141))
}

#[test]
fn replay_into_a_closed_pipe_ends_quietly() {
    let dir = common::tempdir();
    let input = dir.join("big.jsonl");
    std::fs::write(&input, big_input(400)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(["replay", "--color", "never", input.to_str().unwrap()])
        .env_remove("TOOLSTREAM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -c 100`: read a little, then close our end of the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first).starts_with("── Cursor run"));
    drop(stdout);
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    // Generous: only guards against a hang. How soon it stops is not part of this test (that
    // needs the pipeline to stop reading once every user sink has failed).
    let status = wait_with_deadline(&mut child, Duration::from_secs(120));
    let stderr = reader.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(quiet_pipe_end(status), "exit {status:?}; stderr:\n{stderr}");
    assert!(!stderr.contains("sink error"), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Run the binary with a stdout whose reading end is already closed: the pipe's only reader was
/// another process that has exited, so every write fails with EPIPE (deterministically).
fn run_into_closed_pipe(args: &[&str], files: &[&Path]) -> (ExitStatus, String) {
    let mut reader = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .arg("--version")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let write_end = reader.stdin.take().unwrap();
    assert!(reader.wait().unwrap().success());
    let out = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(args)
        .args(files)
        .env_remove("TOOLSTREAM_LOG")
        .env_remove("TOOLSTREAM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn stats_and_config_into_a_closed_pipe_exit_0() {
    let demo = common::example("demo.jsonl");
    for args in [&["stats", "--json"][..], &["stats"][..]] {
        let (status, stderr) = run_into_closed_pipe(args, &[&demo]);
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let dir = common::tempdir();
    let cfg = dir.join("toolstream.toml");
    std::fs::write(&cfg, "").unwrap();
    let cfg = cfg.to_str().unwrap();
    for args in [&["config", "--config", cfg][..], &["config", "--json", "--config", cfg][..]] {
        let (status, stderr) = run_into_closed_pipe(args, &[]);
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn logs_carry_no_ansi_when_stderr_is_not_a_terminal() {
    // A trace file on a full disk fails for real; a failure before the end (events are then
    // dropped) is logged at ERROR. Four replays of the demo trace ~26 KB, more than the trace's
    // 8 KiB write buffer holds, so the failure comes mid-run whatever the batching (one replay's
    // trace fits the buffer and fails only at the final flush, which is reported, not logged).
    if !Path::new("/dev/full").exists() {
        eprintln!("note: /dev/full is absent; skipping");
        return;
    }
    let demo = common::example("demo.jsonl");
    let demo = demo.to_str().unwrap();
    let run = common::toolstream(&["replay", "--color", "never", "--trace", "/dev/full", demo, demo, demo, demo], None);
    assert!(run.stderr.contains("ERROR"), "the failure is still logged: {}", run.stderr);
    assert!(run.stderr.contains("sink error"), "and still reported: {}", run.stderr);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
}
