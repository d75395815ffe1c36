//! Terminal hygiene of the real binary: untrusted text never reaches the terminal with raw escape
//! sequences or control characters, a closed stdout (`| head`) ends quietly instead of with a sink
//! error or a panic, and logs carry no ANSI escapes when stderr is not a terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

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

/// What a hostile stream puts in every text it carries: every bidi embedding, override and
/// isolate ("Trojan Source", U+202A–U+202E, U+2066–U+2069), an OSC title (BEL-terminated), an OSC 8
/// link (ST-terminated), a CSI clear screen, a C1 CSI, C1 NEL, U+2028, C0 controls (SOH, BS, BEL,
/// CR) and DEL.
const HOSTILE: &str = "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}\x1b]0;PWNED\x07\
    \x1b]8;;http://evil.example/\x1b\\\x1b[2J\u{9b}31m\u{85}\u{2028}\x01\x08\x07\r\x7f|";

/// The text a place carries: its tag, then [`HOSTILE`] between `<` and `>`.
fn tagged(tag: &str) -> String {
    format!("{tag}<{HOSTILE}>")
}

/// The places a Cursor CLI stream carries text, each tagged (see [`tagged`]).
const PLACES: [&str; 19] = [
    "model",
    "prompt",
    "thinking",
    "assistant",
    "shellcmd",
    "stdout",
    "stderr",
    "readpath",
    "readcontent",
    "mcptool",
    "mcpresult",
    "toolerror",
    "greppattern",
    "grepline",
    "globfile",
    "diffline",
    "unknownarg",
    "finaltext",
    "runerror",
];

/// Three Cursor CLI runs that carry [`HOSTILE`] in every place of [`PLACES`]: the first in all but
/// the last two, the second only a final text (shown when no text streamed), the third a failed
/// result; then a line that does not decode, whose error on stderr quotes [`HOSTILE`].
fn every_place_run() -> Vec<u8> {
    let sessions = ["0c7e5a31-9d2b-4f60-8a1e-5b3c7d9f2e42", "0c7e5a31-9d2b-4f60-8a1e-5b3c7d9f2e43"];
    let mut lines = vec![
        json!({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/home/dev/x",
               "session_id": SESSION, "model": tagged("model"), "permissionMode": "default"}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": tagged("prompt")}]},
               "session_id": SESSION}),
        json!({"type": "thinking", "subtype": "delta", "text": tagged("thinking"), "session_id": SESSION,
               "timestamp_ms": 1_794_300_000_040_u64}),
        json!({"type": "thinking", "subtype": "completed", "session_id": SESSION, "timestamp_ms": 1_794_300_000_050_u64}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text",
               "text": tagged("assistant")}]}, "session_id": SESSION, "timestamp_ms": 1_794_300_000_060_u64}),
    ];
    let shell = json!({"command": tagged("shellcmd"), "workingDirectory": "", "timeout": 1000});
    let grep = json!({"pattern": tagged("greppattern"), "path": "/home/dev/x"});
    let glob = json!({"targetDirectory": "/home/dev/x", "globPattern": "*"});
    let read = json!({"path": format!("/home/dev/x/{}", tagged("readpath"))});
    let edit = json!({"path": "/home/dev/x/e.txt", "streamContent": "x\n"});
    let mcp = json!({"name": "local-echo", "args": {"text": "hi"}, "providerIdentifier": "local",
                     "toolName": tagged("mcptool"), "serverIdentifier": "local"});
    let calls = [
        (
            "shellToolCall",
            shell.clone(),
            json!({"success": {"command": "c", "workingDirectory": "", "exitCode": 0,
            "signal": "", "stdout": format!("{}\nmore", tagged("stdout")), "stderr": tagged("stderr"),
            "executionTime": 10, "interleavedOutput": ""}}),
        ),
        (
            "readToolCall",
            read,
            json!({"success": {"content": format!("{}\nb\n", tagged("readcontent")),
            "isEmpty": false, "exceededLimit": false, "totalLines": 2, "fileSize": 3, "path": "/home/dev/x/r",
            "readRange": {"startLine": 1, "endLine": 2}}}),
        ),
        (
            "mcpToolCall",
            mcp,
            json!({"success": {"content": [{"text": {"text": tagged("mcpresult")}}], "isError": false}}),
        ),
        (
            "readToolCall",
            json!({"path": "/home/dev/x/missing"}),
            json!({"error": {"errorMessage": tagged("toolerror")}}),
        ),
        (
            "grepToolCall",
            grep,
            json!({"success": {"pattern": "p", "path": "/home/dev/x", "outputMode": "content",
            "workspaceResults": {"/home/dev/x": {"content": {"matches": [{"file": "f.txt", "matches": [
                {"lineNumber": 1, "content": tagged("grepline"), "contentTruncated": false, "isContextLine": false}]}],
            "totalLines": 1, "totalMatchedLines": 1}}}}}),
        ),
        (
            "globToolCall",
            glob,
            json!({"success": {"pattern": "*", "path": "/home/dev/x", "files": [tagged("globfile")],
            "totalFiles": 1}}),
        ),
        (
            "editToolCall",
            edit,
            json!({"success": {"path": "/home/dev/x/e.txt", "linesAdded": 1, "linesRemoved": 0,
            "diffString": format!("--- /dev/null\n+++ b/e.txt\n@@ -1,0 +1 @@\n+{}", tagged("diffline")),
            "message": "wrote"}}),
        ),
        ("fooBarToolCall", json!({"what": tagged("unknownarg")}), json!({"success": {"out": "done"}})),
    ];
    for (n, (tool, args, result)) in calls.into_iter().enumerate() {
        let call = format!("call-place-{n}\nfc_place_{n}");
        // Two seconds apart: the shell call gets its lifecycle line first.
        let at = 1_794_300_001_000_u64 + 3_000 * n as u64;
        lines.push(json!({"type": "tool_call", "subtype": "started", "call_id": call,
            "tool_call": {tool: {"args": args}, "toolCallId": call}, "session_id": SESSION, "timestamp_ms": at}));
        lines.push(json!({"type": "tool_call", "subtype": "completed", "call_id": call,
            "tool_call": {tool: {"args": args, "result": result}, "toolCallId": call}, "session_id": SESSION,
            "timestamp_ms": at + 2_000}));
    }
    lines.push(json!({"type": "result", "subtype": "success", "duration_ms": 300, "is_error": false,
        "result": "done", "session_id": SESSION, "request_id": "places"}));
    for (session, (subtype, is_error, tag)) in
        sessions.iter().zip([("success", false, "finaltext"), ("error", true, "runerror")])
    {
        lines.push(json!({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/home/dev/x",
            "session_id": session, "model": "m", "permissionMode": "default"}));
        lines.push(json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]},
            "session_id": session}));
        lines.push(json!({"type": "result", "subtype": subtype, "duration_ms": 300, "is_error": is_error,
            "result": tagged(tag), "session_id": session, "request_id": "places"}));
    }
    lines.push(json!({"type": "assistant", "message": tagged("decodeerror"), "session_id": SESSION}));
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Nothing a terminal acts on, and no remnant of [`HOSTILE`]'s escape sequences.
fn unsafe_on_a_terminal(s: &str) -> Vec<String> {
    toolstream_testkit::terminal::unsafe_on_a_terminal(s, &["]0;", "]8;", "[2J", "31m"])
}

/// Nothing a terminal acts on (text may quote an escape sequence escaped, as `\u{1b}[2J`).
fn terminal_controls(s: &str) -> Vec<String> {
    toolstream_testkit::terminal::unsafe_on_a_terminal(s, &[])
}

#[test]
fn every_place_a_stream_carries_text_reaches_the_terminal_safe() {
    // Read from a file whose name is hostile too (a name holds no `/`): stderr names it with the
    // decode error.
    let dir = common::tempdir();
    let file = dir.join(tagged("filename").replace('/', "_"));
    std::fs::write(&file, every_place_run()).unwrap();
    let name = file.to_str().unwrap();
    let s = toolstream_sinks::cards::Style::new(true);
    let ours = [s.reset, s.bold, s.dim, s.red, s.green, s.yellow, s.cyan];
    for color in ["never", "always"] {
        for expanded in [false, true] {
            let mut args = vec!["replay", "--color", color, name];
            if expanded {
                args.push("--expanded");
            }
            let run = common::toolstream(&args, None);
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            let err = &run.stderr;
            assert_eq!(terminal_controls(err), Vec::<String>::new(), "{args:?}: {err:?}");
            assert!(err.contains("could not be decoded"), "{args:?}: {err:?}");
            // The file name is shown with its escape sequences removed whole ...
            let shown_name = err.split("filename<").nth(1).and_then(|rest| rest.split(">:").next());
            let shown_name = shown_name.unwrap_or_else(|| panic!("{args:?}: file name not on stderr: {err:?}"));
            assert_eq!(unsafe_on_a_terminal(shown_name), Vec::<String>::new(), "{args:?}: {err:?}");
            // ... and the decode error quotes the line's text escaped (`\u{1b}`, `\u{202e}`).
            assert!(err.contains(r"decodeerror<\u{202a}"), "{args:?}: {err:?}");
            assert!(err.contains(r"\u{1b}]0;PWNED"), "{args:?}: {err:?}");
            let mut out = run.stdout.clone();
            for code in ours {
                out = out.replace(code, "");
            }
            assert_eq!(unsafe_on_a_terminal(&out), Vec::<String>::new(), "{args:?}:\n{out}");
            if expanded {
                for place in PLACES {
                    assert!(out.contains(&format!("{place}<")), "{args:?}: {place} not shown in\n{out}");
                }
                // A lifecycle line showed the shell command.
                assert!(out.contains("… Cursor shell: shellcmd<"), "{out}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stderr_quotes_file_names_sink_specs_and_decode_errors_without_escapes() {
    let dir = common::tempdir();
    let evil = "x\x1b]0;evil\x07\u{202E}\x1b[2Jy.jsonl";
    let file = dir.join(evil);
    let name = file.to_str().unwrap();
    let check = |what: &str, run: &common::Run, code: i32, says: &str| {
        assert_eq!(run.code, code, "{what}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{what}: {:?}", run.stderr);
        assert_eq!(unsafe_on_a_terminal(&run.stderr), Vec::<String>::new(), "{what}: {:?}", run.stderr);
    };
    // A file that is not there.
    check("missing file", &common::toolstream(&["replay", name], None), 2, "No such file");
    check("stats, missing file", &common::toolstream(&["stats", name], None), 2, "No such file");
    // A file whose line does not decode: the error names the file.
    std::fs::write(&file, "{not json\n").unwrap();
    check("decode error", &common::toolstream(&["replay", name], None), 1, "could not be decoded");
    let stats = common::toolstream(&["stats", name], None);
    check("stats, decode error", &stats, 1, "");
    assert_eq!(unsafe_on_a_terminal(&stats.stdout), Vec::<String>::new(), "{:?}", stats.stdout);
    // The debug log quotes the file name too.
    let logged = common::toolstream_env(&["replay", name], None, &[("TOOLSTREAM_LOG", "debug")]);
    check("debug log", &logged, 1, "reading source");
    // A sink whose file cannot be created: the error names the sink spec.
    let demo = common::example("demo.jsonl");
    let sink = format!("jsonl={}/{evil}/trace.jsonl", dir.display());
    let run = common::toolstream(&["replay", "--sink", &sink, demo.to_str().unwrap()], None);
    check("sink spec", &run, 2, "trace.jsonl");
    // A sink spec the command line rejects.
    let run = common::toolstream(&["replay", "--sink", &format!("bogus{evil}"), demo.to_str().unwrap()], None);
    check("usage error", &run, 2, "--sink");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `serve openai` names the file it keeps its key in on stderr: a path from `XDG_CONFIG_HOME`
/// with escape sequences in it is shown without them, and the key is still printed once.
#[test]
fn serve_names_its_key_file_without_escapes() {
    use std::io::BufRead;
    let dir = common::tempdir();
    let xdg = dir.join("x\x1b]0;evil\x07\u{202E}\x1b[2Jy");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolstream"))
        .args(["serve", "openai", "--addr", "127.0.0.1:0", "--replay"])
        .arg(common::example("exec-demo.jsonl"))
        .env("XDG_CONFIG_HOME", &xdg)
        .env("TOOLSTREAM_OPENAI_API_KEY", "")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut stderr = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        let serving = line.contains("serving OpenAI chat completions");
        stderr.push(line);
        if serving {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let stderr = stderr.join("\n");
    let key = std::fs::read_to_string(xdg.join("toolstream/openai-api-key")).unwrap();
    assert_eq!(stderr.matches(key.trim()).count(), 1, "{stderr:?}");
    assert!(stderr.contains("serving OpenAI"), "{stderr:?}");
    assert_eq!(unsafe_on_a_terminal(&stderr), Vec::<String>::new(), "{stderr:?}");
    let _ = std::fs::remove_dir_all(&dir);
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
        assert_eq!(unsafe_on_a_terminal(out), Vec::<String>::new(), "{extra:?}: controls in\n{out:?}");
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
        assert_eq!(unsafe_on_a_terminal(&rest), Vec::<String>::new(), "{extra:?}: controls in\n{:?}", run.stdout);
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
fn logs_carry_no_ansi_when_stderr_is_not_a_terminal_and_a_sink_failure_is_reported_once() {
    // A trace file on a full disk fails for real. Four replays of the demo trace more than the
    // trace's 8 KiB write buffer holds, so the failure comes mid-run whatever the batching. The
    // debug log follows it; the user is told once, at exit, with what the sink never wrote.
    if !toolstream_testkit::require(toolstream_testkit::Tool::DevFull, Path::new("/dev/full").exists(), "/dev/full") {
        return;
    }
    let demo = common::example("demo.jsonl");
    let demo = demo.to_str().unwrap();
    let args = ["replay", "--color", "never", "--trace", "/dev/full", demo, demo, demo, demo];
    let run = common::toolstream_env(&args, None, &[("TOOLSTREAM_LOG", "debug")]);
    assert!(run.stderr.contains("DEBUG") && run.stderr.contains("sink failed"), "logged at debug: {}", run.stderr);
    let reports: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("toolstream: ")).collect();
    assert_eq!(reports.len(), 1, "reported once: {}", run.stderr);
    assert!(
        reports[0].starts_with("toolstream: sink jsonl=/dev/full failed: No space left on device")
            && reports[0].ends_with("events dropped"),
        "{}",
        reports[0]
    );
    let quiet = common::toolstream(&args, None);
    assert_eq!(quiet.stderr.lines().count(), 1, "without debug logs, one line: {}", quiet.stderr);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
}

#[test]
fn debug_logs_follow_the_decisions_of_a_run() {
    let demo = common::example("demo.jsonl");
    let run = common::toolstream_env(&["replay", demo.to_str().unwrap()], None, &[("TOOLSTREAM_LOG", "debug")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for decision in [
        "format detected",
        "opening sink sink=cards when_full=block",
        "sink opened",
        "reading source",
        "run opened",
        "lifecycle timer fired",
        "tool batch settled",
        "run closed",
        "source ended",
        "sink finished",
    ] {
        assert!(run.stderr.contains(decision), "no `{decision}` in the debug log:\n{}", run.stderr);
    }
    // Per-event detail stays at trace level.
    assert!(!run.stderr.contains("TRACE"));
    let quiet = common::toolstream(&["replay", demo.to_str().unwrap()], None);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
}

#[test]
fn stats_exits_1_on_undecodable_lines_and_prints_no_table_for_a_missing_file() {
    let dir = common::tempdir();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n{not json\n").unwrap();
    let run = common::toolstream(&["stats", bad.to_str().unwrap()], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("decode errors    1"), "the counts are still printed: {}", run.stdout);
    let run = common::toolstream(&["stats", "--json", bad.to_str().unwrap()], None);
    assert_eq!(run.code, 1);
    let missing = dir.join("missing.jsonl");
    let run = common::toolstream(&["stats", missing.to_str().unwrap()], None);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "no table of zeros: {}", run.stdout);
    assert!(run.stderr.contains("missing.jsonl") && run.stderr.contains("No such file"), "{}", run.stderr);
}

#[test]
fn shards_are_validated_and_clamped_from_the_flag_as_from_the_environment() {
    let demo = common::example("demo.jsonl");
    let demo = demo.to_str().unwrap();
    let zero = common::toolstream(&["replay", "--shards", "0", demo], None);
    assert_eq!(zero.code, 2);
    assert!(zero.stderr.contains("--shards 0: expected an integer ≥ 1"), "{}", zero.stderr);
    assert!(zero.stdout.is_empty());
    let many = common::toolstream_env(&["replay", "--shards", "1000", demo], None, &[("TOOLSTREAM_LOG", "debug")]);
    assert_eq!(many.code, 0, "{}", many.stderr);
    assert!(many.stderr.contains("shards (flag --shards): 1000 is more than 64; using 64"), "{}", many.stderr);
    assert!(many.stderr.contains("shards=64"), "{}", many.stderr);
    let env = common::toolstream_env(&["replay", demo], None, &[("TOOLSTREAM_SHARDS", "0")]);
    assert_eq!(env.code, 2);
    assert!(env.stderr.contains("TOOLSTREAM_SHARDS"), "{}", env.stderr);
}

#[test]
fn a_forced_format_says_so_for_every_line_of_the_other_format() {
    let demo = common::example("demo.jsonl");
    let run = common::toolstream(&["replay", "--format", "cursor-sdk", demo.to_str().unwrap()], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines = std::fs::read_to_string(&demo).unwrap().lines().count();
    assert_eq!(run.stderr.matches("a cursor-cli line, not cursor-sdk (--format cursor-sdk)").count(), lines);
    assert!(run.stderr.contains(&format!("{lines} line(s) could not be decoded")), "{}", run.stderr);
    let ok = common::toolstream(&["replay", "--format", "cursor-cli", demo.to_str().unwrap()], None);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}
