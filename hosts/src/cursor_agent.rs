//! Source (a): a spawned `cursor-agent -p --output-format stream-json --stream-partial-output`,
//! its stdout read as a live source (SPEC §1.1): the engine frames and decodes its lines once, like
//! any stream; nothing here looks into them.
//!
//! When cursor-agent exits with a non-zero status, the run failed with its stderr as the error
//! (rule 10): the live source reports that failure once its output ended (`LiveInput::with_failure`),
//! and the run stage ends a run still open (no `result` line yet) as failed with that message,
//! scrubbed, as if Cursor had reported it. When it fails before opening any run (not logged in,
//! unknown model) there is no run to end: the provider reports [`AgentProcess::failure`] as a
//! failed message of its own.
//!
//! cursor-agent leads its own process group; stopping it signals that group directly (`SIGTERM`,
//! then `SIGKILL` after [`TERM_GRACE`]), so the shells and servers it started stop with it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::mcp_home::{McpHome, McpServer, APPROVE_FLAG};
use toolstream_engine::source::{LiveInput, Source};

/// Environment variable naming the cursor-agent binary (the `cursor_agent` setting's).
pub use toolstream_engine::config::CURSOR_AGENT_ENV as AGENT_BIN_ENV;

/// How much of cursor-agent's stderr is kept for the error message.
const STDERR_KEEP: usize = 16 * 1024;
/// How much of it goes into the error message.
const STDERR_REPORT: usize = 2000;
/// How long cursor-agent may take to exit after closing its output.
const EXIT_GRACE: Duration = Duration::from_secs(10);
/// How long output may stay open after cursor-agent exited (a background process it started
/// inherits the pipe) before its process group is stopped so the run can end.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);
/// How long cursor-agent's process group has between `SIGTERM` and `SIGKILL`.
pub const TERM_GRACE: Duration = Duration::from_secs(1);

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
    /// One more MCP server for this run (the pi tool bridge): given to cursor-agent through a
    /// home of the run's own, with `--approve-mcps` (see `mcp_home`).
    pub mcp: Option<McpServer>,
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
        if self.mcp.is_some() {
            args.push(APPROVE_FLAG.into());
        }
        args.extend(self.extra_args.iter().map(OsString::from));
        // A prompt that starts with `-` would be read as an option; a leading space is not.
        let prompt = if self.prompt.starts_with('-') { format!(" {}", self.prompt) } else { self.prompt.clone() };
        args.push(prompt.into());
        args
    }
}

/// The running cursor-agent: stopped on abort, waited for at the end of its output.
pub struct AgentProcess {
    child: Mutex<Child>,
    /// Its process group (it leads one): everything it started is signalled with it.
    #[cfg(unix)]
    group: rustix::process::Pid,
    /// Its output reached its end.
    output_ended: AtomicBool,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    stderr_reader: Mutex<Option<JoinHandle<()>>>,
    /// Why it failed (a non-zero exit), once its output ended.
    failure: Mutex<Option<String>>,
    /// The run's own home when it has an extra MCP server; removed once the process is gone.
    home: Mutex<Option<McpHome>>,
}

impl AgentProcess {
    /// Stop it and everything it started (abort): `SIGTERM` to its process group, `SIGKILL` to
    /// what is left after [`TERM_GRACE`]. Safe to call at any time, more than once.
    pub fn kill(&self) {
        self.stop_group();
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.remove_home();
    }

    /// Signal cursor-agent's process group (the processes it started: shells, servers) to stop,
    /// and kill what is still there after [`TERM_GRACE`].
    fn stop_group(&self) {
        #[cfg(unix)]
        {
            use rustix::process::{kill_process_group, test_kill_process_group, Signal};
            if kill_process_group(self.group, Signal::TERM).is_err() {
                return; // no such group any more
            }
            let deadline = Instant::now() + TERM_GRACE;
            while Instant::now() < deadline {
                // Reap cursor-agent itself once it exited: a zombie still counts as a member.
                let _ = self.has_exited();
                if test_kill_process_group(self.group).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = kill_process_group(self.group, Signal::KILL);
        }
    }

    /// Whether cursor-agent itself has exited (its status is kept for `wait`).
    fn has_exited(&self) -> bool {
        self.child.lock().ok().is_some_and(|mut c| matches!(c.try_wait(), Ok(Some(_))))
    }

    /// Why cursor-agent failed, once its output ended (`None` while it runs and when it succeeded).
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Remove the run's own home (the process exited or was killed).
    fn remove_home(&self) {
        if let Ok(mut home) = self.home.lock() {
            home.take();
        }
    }

    /// Once the output ended: wait for the exit and keep (and return) the failure, if any.
    fn check_exit(&self) -> Option<String> {
        let status = self.wait()?;
        self.remove_home();
        if status.success() {
            return None;
        }
        let message = failure_message(&status_text(status), &self.stderr_text());
        // Its stderr is logged where it is scrubbed (the pipeline), not here.
        tracing::debug!("cursor-agent exited with {}", status_text(status));
        if let Ok(mut f) = self.failure.lock() {
            *f = Some(message.clone());
        }
        Some(message)
    }

    /// Wait for the exit, without holding the lock (so `kill` always gets through). A process
    /// that closed its output but does not exit within [`EXIT_GRACE`] is stopped.
    fn wait(&self) -> Option<ExitStatus> {
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            if Instant::now() >= deadline {
                tracing::warn!("cursor-agent closed its output but did not exit: stopping it");
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
    let home = match &cmd.mcp {
        Some(server) => {
            let user_home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
            let home = McpHome::create(user_home.as_deref(), server)
                .map_err(|e| format!("cannot prepare cursor-agent's MCP configuration: {e}"))?;
            command.env("HOME", home.path());
            Some(home)
        }
        None => None,
    };
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
    let process = Arc::new(AgentProcess {
        #[cfg(unix)]
        group: rustix::process::Pid::from_child(&child),
        child: Mutex::new(child),
        output_ended: AtomicBool::new(false),
        stderr,
        stderr_reader: Mutex::new(reader),
        failure: Mutex::new(None),
        home: Mutex::new(home),
    });
    watch_for_orphaned_output(process.clone());
    let reader = AgentOutput { stdout, process: process.clone() };
    let checked = process.clone();
    let live = LiveInput::new("cursor-agent", Box::new(reader)).with_failure(Arc::new(move || checked.check_exit()));
    Ok((Source::Live(live), process))
}

/// If cursor-agent exits while something it started still holds its output open (a background
/// `npm run dev &`), the output would never end and neither would the run: after
/// [`ORPHAN_GRACE`], stop its process group so the pipe closes and the run ends with its status.
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
                process.stop_group();
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch cursor-agent: {e}");
    }
}

/// cursor-agent's stdout, as it comes; notes its end for the watcher.
struct AgentOutput {
    stdout: ChildStdout,
    process: Arc<AgentProcess>,
}

impl Read for AgentOutput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.stdout.read(buf);
        if matches!(read, Ok(0) | Err(_)) && !buf.is_empty() {
            self.process.output_ended.store(true, Ordering::SeqCst);
        }
        read
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

/// The cursor-agent binary: `explicit` (a `--cursor-agent` flag), else the `cursor_agent` setting
/// (`$TOOLSTREAM_CURSOR_AGENT`, default `cursor-agent`, looked up on PATH when spawned).
pub fn agent_bin(explicit: Option<&Path>, config: &toolstream_engine::config::Config) -> PathBuf {
    explicit.map_or_else(|| config.cursor_agent.value.clone(), Path::to_path_buf)
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
            mcp: None,
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
            mcp: None,
            prompt: "-v please".into(),
            ..cmd
        };
        let args: Vec<String> = bare.args().into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(args[4..], [" -v please"]);
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
