//! Source (a): a spawned `cursor-agent -p --output-format stream-json --stream-partial-output`,
//! its stdout read as a live source (SPEC §1.1).
//!
//! When cursor-agent exits with a non-zero status before its `result` line, the run failed with
//! its stderr as the error (rule 10): the stream gets one more line, a stream-json
//! `result`/`error` line for the run's session carrying that message, so the engine closes the
//! run as failed (and scrubs the message) exactly as if Cursor had reported the failure. When it
//! fails before opening any run (not logged in, unknown model), there is no session to end: the
//! message is kept for the provider, which reports it as a failed message of its own.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::source::{LiveInput, Source};

/// Environment variable naming the cursor-agent binary.
pub const AGENT_BIN_ENV: &str = "TOOLSTREAM_CURSOR_AGENT";
/// The binary looked up on PATH otherwise.
pub const DEFAULT_AGENT_BIN: &str = "cursor-agent";

/// Lines longer than this are not inspected for their session id (they are still read).
const SNOOP_MAX_LINE: usize = 64 * 1024;
/// How much of cursor-agent's stderr is kept for the error message.
const STDERR_KEEP: usize = 16 * 1024;
/// How much of it goes into the error message.
const STDERR_REPORT: usize = 2000;
/// How long cursor-agent may take to exit after closing its output.
const EXIT_GRACE: Duration = Duration::from_secs(10);
/// How long output may stay open after cursor-agent exited (a background process it started
/// inherits the pipe) before its process group is killed so the run can end.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);

/// How to run cursor-agent for one prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCommand {
    pub bin: PathBuf,
    pub model: Option<String>,
    pub workspace: Option<PathBuf>,
    pub extra_args: Vec<String>,
    /// `--resume <chat id>`: continue that Cursor chat.
    pub resume: Option<String>,
    /// `--mode <mode>` (`plan`, `ask`); none for Cursor's default agent mode.
    pub mode: Option<&'static str>,
    pub prompt: String,
}

impl AgentCommand {
    /// The arguments, in order: print mode and stream-json with partial output, `--model`,
    /// `--workspace`, `--resume`, `--mode`, the extra arguments, then the prompt.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            ["-p", "--output-format", "stream-json", "--stream-partial-output"].iter().map(OsString::from).collect();
        if let Some(m) = self.model.as_deref().filter(|m| !m.trim().is_empty()) {
            args.push("--model".into());
            args.push(m.into());
        }
        if let Some(w) = &self.workspace {
            args.push("--workspace".into());
            args.push(w.into());
        }
        if let Some(chat) = self.resume.as_deref().filter(|c| !c.trim().is_empty()) {
            args.push("--resume".into());
            args.push(chat.into());
        }
        if let Some(mode) = self.mode {
            args.push(format!("--mode={mode}").into());
        }
        args.extend(self.extra_args.iter().map(OsString::from));
        // A prompt that starts with `-` would be read as an option; a leading space is not.
        let prompt = if self.prompt.starts_with('-') { format!(" {}", self.prompt) } else { self.prompt.clone() };
        args.push(prompt.into());
        args
    }
}

/// The running cursor-agent: killed on abort, waited for at the end of its output.
pub struct AgentProcess {
    child: Mutex<Child>,
    /// cursor-agent leads its own process group: everything it started is killed with it.
    pid: u32,
    /// Its output reached its end.
    output_ended: AtomicBool,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    stderr_reader: Mutex<Option<JoinHandle<()>>>,
    /// Why it failed when no run was open to carry the message.
    failure: Mutex<Option<String>>,
}

impl AgentProcess {
    /// Kill it and everything it started (abort). Safe to call at any time, more than once.
    pub fn kill(&self) {
        self.kill_group();
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kill cursor-agent's process group (the processes it started: shells, servers).
    fn kill_group(&self) {
        #[cfg(unix)]
        {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pid)])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Whether cursor-agent itself has exited (its status is kept for `wait`).
    fn has_exited(&self) -> bool {
        self.child.lock().ok().is_some_and(|mut c| matches!(c.try_wait(), Ok(Some(_))))
    }

    /// The failure no run carried (cursor-agent failed before its stream named a session).
    pub fn unreported_failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Wait for the exit, without holding the lock (so `kill` always gets through). A process
    /// that closed its output but does not exit within [`EXIT_GRACE`] is killed.
    fn wait(&self) -> Option<ExitStatus> {
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            if Instant::now() >= deadline {
                tracing::warn!("cursor-agent closed its output but did not exit: killing it");
                self.kill();
            }
            match self.child.lock() {
                Ok(mut c) => match c.try_wait() {
                    Ok(Some(status)) => return Some(status),
                    Ok(None) => {}
                    Err(_) => return None,
                },
                Err(_) => return None,
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// cursor-agent's stderr as far as it went (waiting briefly for its end).
    fn stderr_text(&self) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            let done = self.stderr_reader.lock().ok().and_then(|h| h.as_ref().map(JoinHandle::is_finished));
            if done != Some(false) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let bytes: Vec<u8> = self.stderr.lock().map(|b| b.iter().copied().collect()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Start cursor-agent; returns the live source of its output and the process.
pub fn spawn(cmd: &AgentCommand) -> Result<(Source, Arc<AgentProcess>), String> {
    let mut command = Command::new(&cmd.bin);
    command.args(cmd.args()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    if let Some(dir) = cmd.workspace.as_deref().filter(|d| d.is_dir()) {
        command.current_dir(dir);
    }
    let mut child = command.spawn().map_err(|e| {
        format!(
            "cannot start {}: {e} (install the Cursor CLI and log in, or point {AGENT_BIN_ENV} at cursor-agent)",
            cmd.bin.display()
        )
    })?;
    let stdout = child.stdout.take().ok_or("cursor-agent has no stdout")?;
    let stderr_pipe = child.stderr.take();
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    let reader = stderr_pipe.map(|mut pipe| {
        let keep = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                tracing::debug!("cursor-agent stderr: {}", String::from_utf8_lossy(&buf[..n]).trim_end());
                if let Ok(mut k) = keep.lock() {
                    k.extend(&buf[..n]);
                    let excess = k.len().saturating_sub(STDERR_KEEP);
                    k.drain(..excess);
                }
            }
        })
    });
    let pid = child.id();
    let process = Arc::new(AgentProcess {
        child: Mutex::new(child),
        pid,
        output_ended: AtomicBool::new(false),
        stderr,
        stderr_reader: Mutex::new(reader),
        failure: Mutex::new(None),
    });
    watch_for_orphaned_output(process.clone());
    let reader = AgentReader {
        stdout,
        process: process.clone(),
        snoop: Snooper::default(),
        last_byte: b'\n',
        tail: None,
        ended: false,
    };
    Ok((Source::Live(LiveInput::new("cursor-agent", Box::new(reader))), process))
}

/// If cursor-agent exits while something it started still holds its output open (a background
/// `npm run dev &`), the output would never end and neither would the run: after
/// [`ORPHAN_GRACE`], kill its process group so the pipe closes and the run ends with its status.
fn watch_for_orphaned_output(process: Arc<AgentProcess>) {
    let spawned = std::thread::Builder::new().name("cursor-agent-watch".into()).spawn(move || {
        while !process.output_ended.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
            if process.has_exited() {
                let deadline = Instant::now() + ORPHAN_GRACE;
                while Instant::now() < deadline {
                    if process.output_ended.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                tracing::warn!("cursor-agent exited but its output stayed open: stopping what it started");
                process.kill_group();
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch cursor-agent: {e}");
    }
}

/// cursor-agent's stdout, plus the closing `result` line when it failed without one.
struct AgentReader {
    stdout: ChildStdout,
    process: Arc<AgentProcess>,
    snoop: Snooper,
    last_byte: u8,
    tail: Option<io::Cursor<Vec<u8>>>,
    ended: bool,
}

impl Read for AgentReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(tail) = self.tail.as_mut() {
            return tail.read(buf);
        }
        if self.ended {
            return Ok(0);
        }
        let n = self.stdout.read(buf)?;
        if n > 0 {
            self.snoop.feed(&buf[..n]);
            self.last_byte = buf[n - 1];
            return Ok(n);
        }
        self.ended = true;
        self.process.output_ended.store(true, Ordering::SeqCst);
        let Some(message) = self.failure() else { return Ok(0) };
        if self.snoop.saw_result {
            tracing::warn!("{message}");
            return Ok(0);
        }
        match self.snoop.session.clone() {
            Some(session) => {
                let mut line = if self.last_byte == b'\n' { Vec::new() } else { vec![b'\n'] };
                let result = serde_json::json!({
                    "type": "result",
                    "subtype": "error",
                    "is_error": true,
                    "session_id": session,
                    "result": message,
                });
                line.extend_from_slice(result.to_string().as_bytes());
                line.push(b'\n');
                let mut tail = io::Cursor::new(line);
                let n = tail.read(buf)?;
                self.tail = Some(tail);
                Ok(n)
            }
            None => {
                if let Ok(mut f) = self.process.failure.lock() {
                    *f = Some(message);
                }
                Ok(0)
            }
        }
    }
}

impl AgentReader {
    /// The error message when cursor-agent exited unsuccessfully.
    fn failure(&self) -> Option<String> {
        let status = self.process.wait()?;
        if status.success() {
            return None;
        }
        Some(failure_message(&status_text(status), &self.process.stderr_text()))
    }
}

fn status_text(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("status {code}"),
        None => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                if let Some(sig) = status.signal() {
                    return format!("signal {sig}");
                }
            }
            status.to_string()
        }
    }
}

/// `cursor-agent exited with <status>: <the end of its stderr>` (unscrubbed: the engine scrubs).
pub fn failure_message(status: &str, stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        return format!("cursor-agent exited with {status} (no error output)");
    }
    let mut start = text.len().saturating_sub(STDERR_REPORT);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let ellipsis = if start > 0 { "…" } else { "" };
    format!("cursor-agent exited with {status}: {ellipsis}{}", &text[start..])
}

/// Learns the session id and whether a `result` line went by, from lines short enough to look at.
#[derive(Debug, Default)]
struct Snooper {
    line: Vec<u8>,
    too_long: bool,
    session: Option<String>,
    saw_result: bool,
}

#[derive(Deserialize)]
struct Head {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

impl Snooper {
    fn feed(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let complete = chunk.last() == Some(&b'\n');
            let body = if complete { &chunk[..chunk.len() - 1] } else { chunk };
            if !self.too_long {
                if self.line.len() + body.len() > SNOOP_MAX_LINE {
                    self.too_long = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(body);
                }
            }
            if complete {
                if !self.too_long {
                    self.look();
                }
                self.line.clear();
                self.too_long = false;
            }
        }
    }

    fn look(&mut self) {
        let Ok(head) = serde_json::from_slice::<Head>(&self.line) else { return };
        if head.kind.as_deref() == Some("result") {
            self.saw_result = true;
        }
        if let Some(s) = head.session_id.filter(|s| !s.is_empty()) {
            self.session = Some(s);
        }
    }
}

/// The cursor-agent binary: `explicit`, else `$TOOLSTREAM_CURSOR_AGENT`, else `cursor-agent`
/// (looked up on PATH when spawned).
pub fn agent_bin(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(AGENT_BIN_ENV).filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_AGENT_BIN))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn command_line() {
        let cmd = AgentCommand {
            bin: "cursor-agent".into(),
            model: Some("auto".into()),
            workspace: Some("/w".into()),
            extra_args: vec!["--force".into()],
            resume: Some("chat-1".into()),
            mode: Some("ask"),
            prompt: "fix it".into(),
        };
        let args: Vec<String> = cmd.args().into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--stream-partial-output",
                "--model",
                "auto",
                "--workspace",
                "/w",
                "--resume",
                "chat-1",
                "--mode=ask",
                "--force",
                "fix it"
            ]
        );
        let bare = AgentCommand {
            model: None,
            workspace: None,
            extra_args: vec![],
            resume: None,
            mode: None,
            prompt: "-v please".into(),
            ..cmd
        };
        let args: Vec<String> = bare.args().into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(args[4..], [" -v please"]);
    }

    #[test]
    fn snooper_finds_the_session_and_the_result_across_chunks() {
        let mut s = Snooper::default();
        s.feed(br#"{"type":"system","subtype":"init","session_id":"s-"#);
        assert_eq!(s.session, None);
        s.feed(b"1\"}\n{\"type\":\"assistant\",\"session_id\":\"s-1\"}\nnot json\n");
        assert_eq!(s.session.as_deref(), Some("s-1"));
        assert!(!s.saw_result);
        let long = format!("{{\"type\":\"result\",\"pad\":\"{}\"}}\n", "x".repeat(SNOOP_MAX_LINE));
        s.feed(long.as_bytes());
        assert!(!s.saw_result, "too long to look at");
        s.feed(b"{\"type\":\"result\",\"session_id\":\"s-1\"}\n");
        assert!(s.saw_result);
    }

    #[test]
    fn failure_messages_keep_the_end_of_stderr() {
        assert_eq!(failure_message("status 1", "  \n"), "cursor-agent exited with status 1 (no error output)");
        assert_eq!(
            failure_message("status 2", "Error: not logged in\n"),
            "cursor-agent exited with status 2: Error: not logged in"
        );
        let long = format!("{}END", "é".repeat(3000));
        let m = failure_message("signal 9", &long);
        assert!(m.starts_with("cursor-agent exited with signal 9: …") && m.ends_with("END"), "{m}");
        assert!(m.len() < STDERR_REPORT + 100);
    }
}
