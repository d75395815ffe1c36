//! The Cursor hook (SPEC §1.5, §10, seed 004): `toolstream hook cursor` answers Cursor's hooks at
//! once — a shell command's `preToolUse` is rewritten to run through `toolstream wrap -- <host
//! shell> -lc '<cmd>'`, so the agent reads compacted output — and, with `--sink`, spools every
//! event and starts a detached delivery when a turn closes (`toolstream_engine::cursor_hooks`).
//! `toolstream install|doctor|uninstall cursor` live in `cursor_install`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use toolstream_actors::compact::classify::{shell_quote, SHELLS};
use toolstream_schemas::cursor_hooks::{HookEvent, NEUTRAL_ANSWER};

use toolstream_engine::config::Config;
use toolstream_engine::cursor_hooks::{spool, HookPaths};

/// Tool names Cursor gives its shell tool.
const SHELL_TOOLS: &[&str] = &["Shell", "shell", "run_terminal_cmd"];
/// Programs whose `wrap` subcommand already compacts: a command run through one is left alone.
const WRAPPERS: &[&str] = &["toolstream", "tokenjuice"];
const WINDOWS_USER_MESSAGE: &str =
    "toolstream's Cursor integration does not support native Windows shells yet. Run Cursor in WSL instead.";
const WINDOWS_AGENT_MESSAGE: &str = "Shell command blocked by toolstream: native Windows shell interception is not supported yet. Use Cursor in WSL and retry.";

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub host: HookHost,
}

#[derive(Debug, Subcommand)]
pub enum HookHost {
    /// Answer a Cursor hook: read its JSON on stdin, print the answer on stdout at once.
    ///
    /// A shell command's `preToolUse` becomes `toolstream wrap -- <host shell> -lc '<cmd>'` (host
    /// shell: `tool_input.shell`, the setting `cursor_shell`, $SHELL, then `sh`; none usable:
    /// unchanged; `--no-compact`: never); other tools, already wrapped commands and unreadable
    /// input are allowed unchanged. On native Windows shell commands are denied with a message to
    /// use WSL. With `--sink`, every event is also spooled and each closed turn delivered to the
    /// sinks by a detached process (see `toolstream hooks status`). Always prints valid JSON and
    /// exits 0, whatever goes wrong.
    Cursor(CursorHookArgs),
}

#[derive(Debug, Args)]
pub struct CursorHookArgs {
    /// The toolstream binary the rewritten command runs (default: this one).
    #[arg(long, value_name = "PATH")]
    pub wrap_launcher: Option<PathBuf>,
    /// Observe: spool every event (`~/.local/state/toolstream/cursor-hooks/`) and deliver each
    /// closed turn to this sink (`otlp[=URL]`, `otlp-grpc[=URL]`, `pi-sessions[=DIR]`);
    /// repeatable. Without it the hook only compacts.
    #[arg(long = "sink", value_name = "SPEC")]
    pub sinks: Vec<String>,
    /// Do not rewrite shell commands for compaction.
    #[arg(long)]
    pub no_compact: bool,
    /// Answer, but spool nothing (`doctor` probes the hook this way).
    #[arg(long, hide = true)]
    pub dry_run: bool,
}

impl CursorHookArgs {
    fn compacts(&self) -> bool {
        !self.no_compact
    }
}

/// Where the hook may look for a host shell.
#[derive(Clone, Debug, Default)]
pub struct ShellEnv {
    pub cursor_shell: Option<String>,
    pub shell: Option<String>,
    pub path: Option<std::ffi::OsString>,
}

impl ShellEnv {
    /// The setting `cursor_shell` of `config`, and the process's `SHELL` and `PATH`.
    pub fn new(config: &Config) -> ShellEnv {
        ShellEnv {
            cursor_shell: Some(config.cursor_shell.value.clone()).filter(|s| !s.is_empty()),
            shell: std::env::var("SHELL").ok(),
            path: std::env::var_os("PATH"),
        }
    }

    /// The host shell: the hook's `tool_input.shell`, the setting `cursor_shell`, $SHELL, then `sh`;
    /// the first that is a known shell and can be found (a path to an executable, or a name on
    /// PATH). `None`: nothing usable.
    pub fn host_shell(&self, from_hook: Option<&str>) -> Option<String> {
        [from_hook, self.cursor_shell.as_deref(), self.shell.as_deref(), Some("sh")]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find_map(|s| self.usable(s))
    }

    fn usable(&self, shell: &str) -> Option<String> {
        let name = Path::new(shell).file_name()?.to_str()?;
        if !SHELLS.contains(&name) {
            return None;
        }
        if shell.contains('/') {
            return is_executable(Path::new(shell)).then(|| shell.to_owned());
        }
        let path = self.path.as_ref()?;
        std::env::split_paths(path).map(|dir| dir.join(shell)).find(|p| is_executable(p))?;
        Some(shell.to_owned())
    }
}

#[cfg(unix)]
pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
pub(super) fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// Whether a `preToolUse` input is for Cursor's shell tool.
fn is_shell_call(input: &Value) -> bool {
    input.get("tool_name").and_then(Value::as_str).is_some_and(|t| SHELL_TOOLS.contains(&t))
}

/// The answer to one `preToolUse` input. `windows`: running on native Windows.
pub fn answer(input: &Value, launcher: &str, env: &ShellEnv, windows: bool) -> Value {
    let allow = json!({ "permission": "allow" });
    if !is_shell_call(input) {
        return allow;
    }
    if windows {
        return json!({
            "permission": "deny",
            "user_message": WINDOWS_USER_MESSAGE,
            "agent_message": WINDOWS_AGENT_MESSAGE,
        });
    }
    let Some(tool_input) = input.get("tool_input").and_then(Value::as_object) else { return allow };
    let Some(command) = tool_input.get("command").and_then(Value::as_str).filter(|c| !c.trim().is_empty()) else {
        return allow;
    };
    if already_wrapped(command) {
        return allow;
    }
    let Some(shell) = env.host_shell(tool_input.get("shell").and_then(Value::as_str)) else { return allow };
    let mut updated = tool_input.clone();
    updated.insert("command".into(), Value::String(wrapped(launcher, &shell, command)));
    json!({ "permission": "allow", "updated_input": updated })
}

/// `<launcher> wrap -- <shell> -lc '<command>'`.
pub fn wrapped(launcher: &str, shell: &str, command: &str) -> String {
    format!("{} wrap -- {} -lc {}", shell_quote(launcher), shell_quote(shell), shell_quote(command))
}

/// Whether a command already runs through `toolstream wrap` (or another compactor's `wrap`).
fn already_wrapped(command: &str) -> bool {
    let n = toolstream_actors::compact::classify::normalize_command(command);
    if n.compound {
        return false;
    }
    let mut words = n.argv.iter();
    let first = words.next().map(|w| w.rsplit('/').next().unwrap_or(w));
    first.is_some_and(|w| WRAPPERS.iter().any(|p| w.starts_with(p))) && words.next().is_some_and(|w| w == "wrap")
}

/// The toolstream binary to name in commands: `explicit`, else this one.
pub fn launcher(explicit: Option<PathBuf>) -> String {
    explicit
        .or_else(|| std::env::current_exe().ok())
        .map_or_else(|| "toolstream".to_owned(), |p| p.to_string_lossy().into_owned())
}

/// Largest hook input read; past it the event is not spooled (and the log says so).
pub const MAX_HOOK_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The answer that changes nothing: `{}` for an observing hook (it never grants or denies a
/// permission), and what the compaction-only hook has always answered, `{"permission":"allow"}`.
fn neutral(observing: bool) -> String {
    if observing {
        NEUTRAL_ANSWER.to_owned()
    } else {
        json!({ "permission": "allow" }).to_string()
    }
}

/// `toolstream hook cursor`: answer at once, then (observing) spool the payload and, when it
/// closes a turn, start a detached delivery. Never fails the user's agent: any internal error or
/// panic gives the neutral answer and exit status 0.
pub fn run_hook(args: HookArgs) -> anyhow::Result<i32> {
    let HookHost::Cursor(args) = args.host;
    let observing = !args.sinks.is_empty();
    let mut answered = false;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cursor_hook(&args, &mut answered)));
    if outcome.is_err() {
        if let Ok(paths) = HookPaths::locate() {
            spool::log(&paths, "hook", "internal error (panic): answered neutrally");
        }
        if !answered {
            say(&neutral(observing));
        }
    }
    Ok(0)
}

/// Print the answer; a reader that went away is not the agent's problem.
fn say(answer: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{answer}");
    let _ = stdout.flush();
}

fn cursor_hook(args: &CursorHookArgs, answered: &mut bool) {
    let observing = !args.sinks.is_empty();
    let mut bytes = Vec::new();
    let read = std::io::stdin().lock().take(MAX_HOOK_INPUT_BYTES + 1).read_to_end(&mut bytes);
    let too_large = bytes.len() as u64 > MAX_HOOK_INPUT_BYTES;
    let input: Result<Value, String> = match read {
        Err(e) => Err(format!("cannot read the hook input: {e}")),
        Ok(_) if too_large => Err(format!("the hook input is over {MAX_HOOK_INPUT_BYTES} bytes")),
        Ok(_) => serde_json::from_slice(&bytes).map_err(|e| format!("the hook input is not JSON: {e}")),
    };
    let answer = match &input {
        Ok(v) if args.compacts() && (!observing || is_shell_pre_tool_use(v)) => {
            answer(v, &launcher(args.wrap_launcher.clone()), &ShellEnv::new(&hook_config()), cfg!(windows)).to_string()
        }
        _ => neutral(observing),
    };
    say(&answer);
    *answered = true;
    if !observing {
        if let Err(e) = &input {
            tracing::warn!("{e}; allowing the tool call unchanged");
        }
        return;
    }
    let Ok(paths) = HookPaths::locate() else { return };
    match input {
        Err(e) => spool::log(&paths, "hook", &format!("{e}: answered neutrally, nothing spooled")),
        Ok(v) if args.dry_run => drop(v),
        Ok(mut v) => observe(&paths, args, &mut v),
    }
}

/// The settings the hook answers with. Settings it cannot use never fail the agent's call: they
/// are left out, and logged (`toolstream doctor cursor` reports them).
fn hook_config() -> Config {
    let config = Config::load_forgiving(&|var| std::env::var(var).ok());
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    config
}

/// Whether an input is Cursor's `preToolUse` (or an input without an event name, as older hook
/// callers send) for its shell tool: the one input the compaction answer rewrites.
fn is_shell_pre_tool_use(v: &Value) -> bool {
    let event = v.get("hook_event_name").and_then(Value::as_str);
    matches!(event, None | Some("preToolUse")) && is_shell_call(v)
}

/// Spool the payload; start a delivery when it closes a turn.
fn observe(paths: &HookPaths, args: &CursorHookArgs, payload: &mut Value) {
    let event = payload.get("hook_event_name").and_then(Value::as_str).map(str::to_owned);
    let known = event.as_deref().and_then(HookEvent::from_name);
    if known.is_none() {
        let name = event.as_deref().unwrap_or("(no hook_event_name)");
        spool::log(paths, "hook", &format!("unknown event {name}: spooled as it is"));
    }
    match spool::append(paths, spool::now_ms(), payload) {
        Ok(s) if s.clipped > 0 => spool::log(
            paths,
            "hook",
            &format!("{}: {} string(s) over {} chars cut short", s.file.display(), s.clipped, spool::MAX_STRING_CHARS),
        ),
        Ok(_) => {}
        Err(e) => {
            spool::log(
                paths,
                "hook",
                &format!("cannot spool a {} event: {e}; it is lost", event.as_deref().unwrap_or("?")),
            );
            return;
        }
    }
    // A turn closed (or a session starts: a good moment for turns left idle by an earlier one).
    if matches!(
        known,
        Some(HookEvent::Stop | HookEvent::SubagentStop | HookEvent::SessionEnd | HookEvent::SessionStart)
    ) {
        if let Err(e) = start_delivery(&args.sinks) {
            spool::log(paths, "hook", &format!("cannot start a delivery: {e}; the turn stays pending"));
        }
    }
}

/// Start `toolstream hooks deliver` detached: its own process group, no standard streams, not
/// waited for (Cursor waits only for this process).
fn start_delivery(sinks: &[String]) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["hooks", "deliver"]);
    for s in sinks {
        cmd.arg("--sink").arg(s);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ShellEnv {
        ShellEnv { cursor_shell: None, shell: Some("/bin/sh".into()), path: std::env::var_os("PATH") }
    }

    #[test]
    fn a_shell_command_is_wrapped_keeping_the_other_fields() {
        let input =
            json!({"tool_name": "Shell", "tool_input": {"command": "cd /r && echo 'hi'", "working_directory": "/r"}});
        let out = answer(&input, "/usr/bin/toolstream", &env(), false);
        assert_eq!(out["permission"], "allow");
        assert_eq!(out["updated_input"]["working_directory"], "/r");
        assert_eq!(
            out["updated_input"]["command"],
            r"/usr/bin/toolstream wrap -- /bin/sh -lc 'cd /r && echo '\''hi'\'''"
        );
    }

    #[test]
    fn the_host_shell_comes_from_the_hook_then_the_environment() {
        let e = ShellEnv { cursor_shell: Some("/nonexistent/zsh".into()), shell: Some("/bin/sh".into()), path: None };
        assert_eq!(e.host_shell(Some("/bin/sh")).as_deref(), Some("/bin/sh"));
        assert_eq!(e.host_shell(Some("/bin/notashell")).as_deref(), Some("/bin/sh"), "unusable entries are skipped");
        let none = ShellEnv { cursor_shell: None, shell: Some("/nonexistent/bash".into()), path: None };
        assert_eq!(none.host_shell(None), None, "`sh` needs a PATH to be found");
        let input = json!({"tool_name": "Shell", "tool_input": {"command": "ls"}});
        assert_eq!(answer(&input, "toolstream", &none, false), json!({"permission": "allow"}));
    }

    #[test]
    fn other_tools_and_wrapped_commands_pass_unchanged() {
        let allow = json!({"permission": "allow"});
        assert_eq!(answer(&json!({"tool_name": "Read", "tool_input": {"path": "x"}}), "t", &env(), false), allow);
        for cmd in ["/x/toolstream wrap --raw -- git log", "tokenjuice wrap -- git log"] {
            let wrapped = json!({"tool_name": "Shell", "tool_input": {"command": cmd}});
            assert_eq!(answer(&wrapped, "t", &env(), false), allow);
        }
        // A pipeline that starts with a wrap is still rewritten: its other stages run unwrapped.
        let piped = json!({"tool_name": "Shell", "tool_input": {"command": "toolstream wrap -- cargo test | tail"}});
        assert!(answer(&piped, "t", &env(), false).get("updated_input").is_some());
        assert_eq!(answer(&Value::Null, "t", &env(), false), allow);
    }

    #[test]
    fn native_windows_denies_shell_commands() {
        let input = json!({"tool_name": "Shell", "tool_input": {"command": "dir"}});
        let out = answer(&input, "t", &env(), true);
        assert_eq!(out["permission"], "deny");
        assert!(out["user_message"].as_str().unwrap().contains("WSL"));
        assert!(out["agent_message"].as_str().unwrap().contains("WSL"));
        assert_eq!(answer(&json!({"tool_name": "Read"}), "t", &env(), true)["permission"], "allow");
    }
}
