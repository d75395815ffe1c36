//! The Cursor integration (SPEC §10, seed 004): `toolstream hook cursor` answers Cursor's
//! `preToolUse` hook — a shell command is rewritten to run through `toolstream wrap -- <host
//! shell> -lc '<cmd>'`, so the agent reads compacted output — and `toolstream install|doctor|
//! uninstall cursor` manage the entry in `~/.cursor/hooks.json`, leaving every other hook as it was.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};
use toolstream_actors::compact::classify::{shell_quote, SHELLS};

use super::hooks_json;

/// Tool names Cursor gives its shell tool.
const SHELL_TOOLS: &[&str] = &["Shell", "shell", "run_terminal_cmd"];
/// The environment variable naming the host shell (before `SHELL`).
pub const CURSOR_SHELL_ENV: &str = "TOOLSTREAM_CURSOR_SHELL";
/// Programs whose `wrap` subcommand already compacts: a command run through one is left alone.
const WRAPPERS: &[&str] = &["toolstream", "tokenjuice"];
/// What the installed hook runs after the launcher.
const HOOK_ARGS: &str = "hook cursor";
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
    /// Answer Cursor's `preToolUse` hook: read its JSON on stdin, print the answer on stdout.
    ///
    /// A shell command becomes `toolstream wrap -- <host shell> -lc '<cmd>'` (host shell:
    /// `tool_input.shell`, $TOOLSTREAM_CURSOR_SHELL, $SHELL, then `sh`; none usable: unchanged);
    /// other tools, already wrapped commands and unreadable input are allowed unchanged. On native
    /// Windows shell commands are denied with a message to use WSL. Always prints valid JSON and
    /// exits 0.
    Cursor(CursorHookArgs),
}

#[derive(Debug, Args)]
pub struct CursorHookArgs {
    /// The toolstream binary the rewritten command runs (default: this one).
    #[arg(long, value_name = "PATH")]
    pub wrap_launcher: Option<PathBuf>,
}

/// A host whose hooks toolstream manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Cursor: `~/.cursor/hooks.json`, a `preToolUse` hook on the Shell tool.
    Cursor,
}

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Which host (only `cursor` today).
    #[arg(value_enum)]
    pub host: Host,
    /// The toolstream binary the hook runs (default: this one). Install only.
    #[arg(long, value_name = "PATH")]
    pub launcher: Option<PathBuf>,
}

/// Where the hook may look for a host shell.
#[derive(Clone, Debug, Default)]
pub struct ShellEnv {
    pub cursor_shell: Option<String>,
    pub shell: Option<String>,
    pub path: Option<std::ffi::OsString>,
}

impl ShellEnv {
    pub fn from_process() -> ShellEnv {
        ShellEnv {
            cursor_shell: std::env::var(CURSOR_SHELL_ENV).ok(),
            shell: std::env::var("SHELL").ok(),
            path: std::env::var_os("PATH"),
        }
    }

    /// The host shell: the hook's `tool_input.shell`, $TOOLSTREAM_CURSOR_SHELL, $SHELL, then `sh`;
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
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The answer to one `preToolUse` input. `windows`: running on native Windows.
pub fn answer(input: &Value, launcher: &str, env: &ShellEnv, windows: bool) -> Value {
    let allow = json!({ "permission": "allow" });
    let is_shell = input.get("tool_name").and_then(Value::as_str).is_some_and(|t| SHELL_TOOLS.contains(&t));
    if !is_shell {
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

fn launcher(explicit: Option<PathBuf>) -> String {
    explicit
        .or_else(|| std::env::current_exe().ok())
        .map_or_else(|| "toolstream".to_owned(), |p| p.to_string_lossy().into_owned())
}

/// `toolstream hook cursor`.
pub fn run_hook(args: HookArgs) -> anyhow::Result<i32> {
    let HookHost::Cursor(args) = args.host;
    let mut stdin = String::new();
    let input = match std::io::stdin().read_to_string(&mut stdin) {
        Ok(_) => serde_json::from_str(&stdin).unwrap_or_else(|e| {
            tracing::warn!("hook input is not JSON ({e}); allowing the tool call unchanged");
            Value::Null
        }),
        Err(e) => {
            tracing::warn!("cannot read the hook input ({e}); allowing the tool call unchanged");
            Value::Null
        }
    };
    let out = answer(&input, &launcher(args.wrap_launcher), &ShellEnv::from_process(), cfg!(windows));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    stdout.flush()?;
    Ok(0)
}

/// `~/.cursor/hooks.json`.
fn hooks_path() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cursor").join("hooks.json"))
}

/// Whether a `preToolUse` entry (its JSON text) is toolstream's.
fn is_ours(entry: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(entry) else { return false };
    let Some(cmd) = v.get("command").and_then(Value::as_str) else { return false };
    let n = toolstream_actors::compact::classify::normalize_command(cmd);
    let first = n.argv.first().map(|w| w.rsplit('/').next().unwrap_or(w));
    !n.compound && first.is_some_and(|w| w.starts_with("toolstream")) && n.argv[1..].join(" ") == HOOK_ARGS
}

/// Write `text` to `path` through a temporary file renamed into place.
fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("the hooks file has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(".hooks.json.toolstream-{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

fn read_hooks(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// `toolstream install cursor`.
pub fn run_install(args: HostArgs) -> anyhow::Result<i32> {
    let path = hooks_path()?;
    let command = format!("{} {HOOK_ARGS}", shell_quote(&launcher(args.launcher)));
    let text = match read_hooks(&path)? {
        None => hooks_json::new_file(&command),
        Some(text) => {
            // A previous toolstream entry (maybe another launcher) is replaced.
            let text = hooks_json::remove(&text, is_ours)
                .with_context(|| format!("{} cannot be edited safely", path.display()))?
                .unwrap_or(text);
            hooks_json::insert(&text, &hooks_json::entry_json(&command))
                .with_context(|| format!("{} cannot be edited safely", path.display()))?
        }
    };
    write_atomic(&path, &text)?;
    println!("installed: {} runs `{command}` before every Cursor shell command", path.display());
    Ok(0)
}

/// `toolstream uninstall cursor`.
pub fn run_uninstall(_args: HostArgs) -> anyhow::Result<i32> {
    let path = hooks_path()?;
    let Some(text) = read_hooks(&path)? else {
        println!("nothing to uninstall: {} does not exist", path.display());
        return Ok(0);
    };
    match hooks_json::remove(&text, is_ours).with_context(|| format!("{} cannot be edited safely", path.display()))? {
        Some(out) => {
            write_atomic(&path, &out)?;
            println!("uninstalled: toolstream's hook removed from {}; other hooks unchanged", path.display());
        }
        None => println!("nothing to uninstall: {} has no toolstream hook", path.display()),
    }
    Ok(0)
}

/// `toolstream doctor cursor`: `health: ok`, or `health: broken` and what is wrong (exit 1).
pub fn run_doctor(_args: HostArgs) -> anyhow::Result<i32> {
    let path = hooks_path()?;
    println!("hooks file: {}", path.display());
    let problems = diagnose(&path);
    if problems.is_empty() {
        println!("health: ok");
        return Ok(0);
    }
    println!("health: broken");
    for p in &problems {
        println!("- {p}");
    }
    Ok(1)
}

fn diagnose(path: &Path) -> Vec<String> {
    let text = match read_hooks(path) {
        Ok(Some(text)) => text,
        Ok(None) => return vec!["the hooks file does not exist: run `toolstream install cursor`".into()],
        Err(e) => return vec![format!("{e:#}")],
    };
    let mut problems = Vec::new();
    match hooks_json::version(&text) {
        Ok(Some(v)) if v == "1" => {}
        Ok(v) => problems.push(format!("`version` is {}, Cursor expects 1", v.as_deref().unwrap_or("missing"))),
        Err(e) => return vec![format!("the hooks file is unusable: {e}")],
    }
    let entries = match hooks_json::pre_tool_use(&text) {
        Ok(entries) => entries,
        Err(e) => return vec![format!("the hooks file is unusable: {e}")],
    };
    let ours: Vec<Value> = entries.iter().filter(|e| is_ours(e)).filter_map(|e| serde_json::from_str(e).ok()).collect();
    let entry = match ours.as_slice() {
        [] => {
            problems.push("no toolstream preToolUse hook: run `toolstream install cursor`".into());
            return problems;
        }
        [one] => one,
        [first, ..] => {
            problems.push(format!("{} toolstream preToolUse hooks; expected one (reinstall)", ours.len()));
            first
        }
    };
    if entry.get("type").and_then(Value::as_str) != Some("command") {
        problems.push("the hook's `type` is not `command`".into());
    }
    if entry.get("matcher").and_then(Value::as_str) != Some("Shell") {
        problems.push("the hook's `matcher` is not `Shell`".into());
    }
    let command = entry.get("command").and_then(Value::as_str).unwrap_or_default();
    let argv = toolstream_actors::compact::classify::normalize_command(command).argv;
    match argv.split_first() {
        Some((exe, _)) if !is_executable(Path::new(exe)) && !exe.contains('/') => {
            problems.push(format!("the launcher `{exe}` is not a path to an executable"));
        }
        Some((exe, _)) if !is_executable(Path::new(exe)) => {
            problems.push(format!("the launcher `{exe}` does not exist or is not executable"));
        }
        Some((exe, rest)) => {
            if let Err(e) = probe(exe, rest) {
                problems.push(format!("the hook does not answer correctly: {e:#}"));
            }
        }
        None => problems.push("the hook's command is empty".into()),
    }
    if ShellEnv::from_process().host_shell(None).is_none() {
        problems.push(format!("no usable host shell ({CURSOR_SHELL_ENV}, SHELL, sh): commands would pass unwrapped"));
    }
    problems
}

/// Run the installed hook on a sample shell call and check its answer.
fn probe(exe: &str, args: &[String]) -> anyhow::Result<()> {
    let input = json!({ "tool_name": "Shell", "tool_input": { "command": "git status --short" } }).to_string();
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running {exe}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("no answer within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out)?;
    }
    let answer: Value = serde_json::from_str(out.trim()).with_context(|| format!("not JSON: {out:?}"))?;
    let cmd = answer.pointer("/updated_input/command").and_then(Value::as_str).unwrap_or_default();
    if answer["permission"] != "allow" || !cmd.contains(" wrap -- ") {
        bail!("unexpected answer {answer}");
    }
    Ok(())
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

    #[test]
    fn our_entries_are_recognised_by_their_command() {
        assert!(is_ours(r#"{"command": "/usr/local/bin/toolstream hook cursor"}"#));
        assert!(is_ours(r#"{"command": "'/opt/my tools/toolstream' hook cursor"}"#));
        assert!(!is_ours(r#"{"command": "tokenjuice cursor-pre-tool-use"}"#));
        assert!(!is_ours(r#"{"command": "toolstream hook claude"}"#));
        assert!(!is_ours(r#"{"command": "toolstream hook cursor | tee log"}"#));
    }
}
