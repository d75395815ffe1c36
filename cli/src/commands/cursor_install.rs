//! `toolstream install|uninstall|doctor cursor`: toolstream's entries in Cursor's `hooks.json`
//! (`~/.cursor/hooks.json`, or `<project>/.cursor/hooks.json` with `--project`).
//!
//! Without a sink, install writes the compaction hook alone (a `preToolUse` entry on the Shell
//! tool); with sinks, one entry per event toolstream reads, each running `toolstream hook cursor
//! --sink …`. Install merges into the file's text (every other byte stays), keeps the file as it
//! was without toolstream in `hooks.json.toolstream-backup`, and records what it added (in the
//! state folder). Uninstall puts the backup back when the file is still exactly what install
//! wrote, and otherwise cuts toolstream's entries (and the keys install added) out of the text the
//! user changed since. Doctor checks the binary, the entries, the spool and every sink.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use toolstream_actors::compact::classify::{normalize_command, shell_quote};
use toolstream_engine::config::{Config, CURSOR_SHELL_ENV};
use toolstream_schemas::cursor_hooks::HookEvent;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};
use toolstream_sinks::otel::config::{OtelConfig, Protocol};
use toolstream_sinks::pi_session::dir::SessionsRoot;

use super::hook::{is_executable, launcher, ShellEnv};
use super::hooks_json;
use toolstream_engine::cursor_hooks::deliver::takes;
use toolstream_engine::cursor_hooks::{save_sinks, spool, HookPaths};
use toolstream_engine::sinks::{SinkKind, SinkSpec};

/// What the installed hook runs after the launcher.
const HOOK_ARGS: [&str; 2] = ["hook", "cursor"];
/// How long a probe (the hook, a collector) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A host whose hooks toolstream manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Cursor: `~/.cursor/hooks.json` (or a project's `.cursor/hooks.json`).
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
    /// Install only: observe every Cursor agent turn (IDE and CLI) and deliver it to this sink:
    /// `otlp[=URL]`, `otlp-grpc[=URL]` or `pi-sessions[=DIR]`; repeatable. Without it only the
    /// compaction hook is installed.
    #[arg(long = "sink", value_name = "SPEC")]
    pub sinks: Vec<SinkSpec>,
    /// Install only: rewrite shell commands to run through `toolstream wrap` (the default).
    #[arg(long, overrides_with = "no_compact")]
    pub compact: bool,
    /// Install only: never rewrite shell commands.
    #[arg(long, overrides_with = "compact")]
    pub no_compact: bool,
    /// Use `<DIR>/.cursor/hooks.json` (this project only) instead of `~/.cursor/hooks.json`.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// The `hooks.json` a command works on.
fn hooks_path(args: &HostArgs) -> anyhow::Result<PathBuf> {
    let base = match &args.project {
        Some(dir) => dir.clone(),
        None => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty()).context("HOME is not set")?),
    };
    Ok(base.join(".cursor").join("hooks.json"))
}

fn backup_path(hooks: &Path) -> PathBuf {
    let mut name = hooks.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".toolstream-backup");
    hooks.with_file_name(name)
}

/// What install did to a `hooks.json`, for an exact uninstall.
#[derive(Debug, Default, Serialize, Deserialize)]
struct InstallRecord {
    /// sha256 of the file as install wrote it.
    installed_sha: String,
    /// sha256 of the backup (the file without toolstream).
    backup_sha: String,
    /// Event keys install added to `hooks`.
    added_keys: Vec<String>,
    /// The file did not exist before.
    created_file: bool,
}

impl InstallRecord {
    fn path(paths: &HookPaths, hooks: &Path) -> PathBuf {
        let abs = std::path::absolute(hooks).unwrap_or_else(|_| hooks.to_path_buf());
        paths.root.join("installs").join(format!("{}.json", sha256(abs.to_string_lossy().as_bytes())))
    }

    fn load(paths: &HookPaths, hooks: &Path) -> Option<InstallRecord> {
        serde_json::from_str(&std::fs::read_to_string(InstallRecord::path(paths, hooks)).ok()?).ok()
    }

    fn save(&self, paths: &HookPaths, hooks: &Path) -> anyhow::Result<()> {
        let file = InstallRecord::path(paths, hooks);
        if let Some(dir) = file.parent() {
            toolstream_engine::state_dir::private_dir(dir)?;
        }
        spool::write_private(&file, serde_json::to_string_pretty(self)?.as_bytes())?;
        Ok(())
    }

    fn forget(paths: &HookPaths, hooks: &Path) {
        let _ = std::fs::remove_file(InstallRecord::path(paths, hooks));
    }
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// toolstream's command in an entry, taken apart: the launcher and the arguments after
/// `hook cursor`; `None` when the entry is not toolstream's.
fn our_command(entry: &str) -> Option<(String, Vec<String>)> {
    let v: Value = serde_json::from_str(entry).ok()?;
    let cmd = v.get("command").and_then(Value::as_str)?;
    let n = normalize_command(cmd);
    if n.compound {
        return None;
    }
    let argv = n.argv;
    let first = argv.first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    (name.starts_with("toolstream") && argv.get(1..3) == Some(&HOOK_ARGS.map(String::from)[..]))
        .then(|| (first.clone(), argv[3..].to_vec()))
}

/// Whether an entry (its JSON text) is toolstream's.
pub(super) fn is_ours(entry: &str) -> bool {
    our_command(entry).is_some()
}

/// The `--sink` values of toolstream's hook arguments.
fn sinks_of(args: &[String]) -> Vec<String> {
    args.windows(2).filter(|w| w[0] == "--sink").map(|w| w[1].clone()).collect()
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

/// `text` without toolstream: the backup when `text` is exactly what install wrote, else `text`
/// with toolstream's entries cut out (and the keys install added, once empty; without a record,
/// the trailing keys that held only toolstream's entries).
fn without_ours(path: &Path, text: &str, record: Option<&InstallRecord>) -> anyhow::Result<String> {
    if let Some(r) = record {
        if sha256(text.as_bytes()) == r.installed_sha {
            if let Ok(backup) = std::fs::read_to_string(backup_path(path)) {
                if sha256(backup.as_bytes()) == r.backup_sha {
                    return Ok(backup);
                }
            }
        }
    }
    let unsafe_edit = || format!("{} cannot be edited safely", path.display());
    let added: Vec<String> = match record {
        Some(r) => r.added_keys.clone(),
        None => trailing_ours(text).with_context(unsafe_edit)?,
    };
    let out = hooks_json::remove(text, is_ours, |e| added.iter().any(|a| a == e)).with_context(unsafe_edit)?;
    Ok(out.unwrap_or_else(|| text.to_owned()))
}

/// The events at the end of `hooks` whose entries are all toolstream's (what an install without
/// a record added).
fn trailing_ours(text: &str) -> Result<Vec<String>, hooks_json::HooksError> {
    let mut out = Vec::new();
    for event in hooks_json::events(text)?.into_iter().rev() {
        let entries = hooks_json::entries(text, &event).unwrap_or_default();
        if entries.is_empty() || !entries.iter().all(|e| is_ours(e)) {
            break;
        }
        out.push(event);
    }
    Ok(out)
}

/// `toolstream install cursor`.
pub fn run_install(args: HostArgs) -> anyhow::Result<i32> {
    for s in &args.sinks {
        if let Err(e) = takes(s) {
            toolstream_engine::say!("toolstream: --sink {}: {e}", s.label());
            return Ok(2);
        }
    }
    let compact = !args.no_compact;
    let path = hooks_path(&args)?;
    let paths = HookPaths::locate().context("cannot create toolstream's state folder")?;
    let launcher = launcher(args.launcher.clone());
    let mut command = format!("{} {}", shell_quote(&launcher), HOOK_ARGS.join(" "));
    let entries: Vec<(&str, String)> = if args.sinks.is_empty() {
        if !compact {
            toolstream_engine::say!("toolstream: nothing to install: no --sink to deliver to, and --no-compact");
            return Ok(2);
        }
        vec![(HookEvent::PreToolUse.name(), hooks_json::entry_json(&command))]
    } else {
        for s in &args.sinks {
            command.push_str(&format!(" --sink {}", shell_quote(&s.to_string())));
        }
        if !compact {
            command.push_str(" --no-compact");
        }
        HookEvent::installed().map(|e| (e.name(), hooks_json::command_entry_json(&command))).collect()
    };
    let record = InstallRecord::load(&paths, &path);
    let current = read_hooks(&path)?;
    let (text, added, created, base) = match &current {
        None => {
            let text = hooks_json::new_file(&entries);
            (text, entries.iter().map(|(e, _)| (*e).to_owned()).collect(), true, String::new())
        }
        Some(current) => {
            let base = without_ours(&path, current, record.as_ref())?;
            let mut text = base.clone();
            let mut added = Vec::new();
            for (event, entry) in &entries {
                let existing = hooks_json::entries(&text, event)
                    .with_context(|| format!("{} cannot be edited safely", path.display()))?;
                let had_key = hooks_json::events(&text).unwrap_or_default().iter().any(|k| k == event);
                if existing.is_empty() && !had_key {
                    added.push((*event).to_owned());
                }
                text = hooks_json::insert(&text, event, entry)
                    .with_context(|| format!("{} cannot be edited safely", path.display()))?;
            }
            let created = record.as_ref().is_some_and(|r| r.created_file);
            (text, added, created, base)
        }
    };
    if !created {
        std::fs::write(backup_path(&path), &base)
            .with_context(|| format!("writing the backup {}", backup_path(&path).display()))?;
    }
    write_atomic(&path, &text)?;
    let rec = InstallRecord {
        installed_sha: sha256(text.as_bytes()),
        backup_sha: sha256(base.as_bytes()),
        added_keys: added,
        created_file: created,
    };
    rec.save(&paths, &path)?;
    save_sinks(&paths, &args.sinks.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    if args.sinks.is_empty() {
        println!("installed: {} runs `{command}` before every Cursor shell command", path.display());
    } else {
        println!(
            "installed: {} runs `{command}` on {} Cursor hook events; every agent turn (IDE and CLI) goes to {}",
            path.display(),
            entries.len(),
            args.sinks.iter().map(SinkSpec::label).collect::<Vec<_>>().join(", ")
        );
        println!("spool: {} (`toolstream hooks status` shows what is pending)", paths.spool_dir().display());
    }
    Ok(0)
}

/// `toolstream uninstall cursor`.
pub fn run_uninstall(args: HostArgs) -> anyhow::Result<i32> {
    let path = hooks_path(&args)?;
    let paths = HookPaths::locate().ok();
    let record = paths.as_ref().and_then(|p| InstallRecord::load(p, &path));
    let Some(text) = read_hooks(&path)? else {
        println!("nothing to uninstall: {} does not exist", path.display());
        return Ok(0);
    };
    let has_ours = hooks_json::events(&text)
        .unwrap_or_default()
        .iter()
        .any(|e| hooks_json::entries(&text, e).unwrap_or_default().iter().any(|x| is_ours(x)));
    if !has_ours {
        println!("nothing to uninstall: {} has no toolstream hook", path.display());
        return Ok(0);
    }
    let exact = record.as_ref().is_some_and(|r| sha256(text.as_bytes()) == r.installed_sha);
    let out = without_ours(&path, &text, record.as_ref())?;
    if exact && record.as_ref().is_some_and(|r| r.created_file) {
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        println!("uninstalled: {} removed (toolstream had created it)", path.display());
    } else {
        write_atomic(&path, &out)?;
        println!("uninstalled: toolstream's hooks removed from {}; other hooks unchanged", path.display());
    }
    if let Some(p) = &paths {
        InstallRecord::forget(p, &path);
    }
    if exact {
        let _ = std::fs::remove_file(backup_path(&path));
    }
    Ok(0)
}

/// `toolstream doctor cursor`: `health: ok`, or `health: broken` and what is wrong (exit 1).
pub fn run_doctor(args: HostArgs) -> anyhow::Result<i32> {
    let path = hooks_path(&args)?;
    println!("hooks file: {}", path.display());
    let (problems, notes) = diagnose(&path);
    for n in &notes {
        println!("{n}");
    }
    if problems.is_empty() {
        println!("health: ok");
        return Ok(0);
    }
    println!("health: broken");
    for p in &problems {
        // A problem may quote the file (its JSON error): a display line (SPEC §8).
        println!("- {}", display_line(p, DISPLAY_LINE_CHARS));
    }
    Ok(1)
}

/// What is wrong (problems) and what is worth knowing (notes).
fn diagnose(path: &Path) -> (Vec<String>, Vec<String>) {
    let text = match read_hooks(path) {
        Ok(Some(text)) => text,
        Ok(None) => return (vec!["the hooks file does not exist: run `toolstream install cursor`".into()], Vec::new()),
        Err(e) => return (vec![format!("{e:#}")], Vec::new()),
    };
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    match hooks_json::version(&text) {
        Ok(Some(v)) if v == "1" => {}
        Ok(v) => problems.push(format!("`version` is {}, Cursor expects 1", v.as_deref().unwrap_or("missing"))),
        Err(e) => return (vec![format!("the hooks file is unusable: {e}")], notes),
    }
    let ours_in = |event: &str| -> Vec<Value> {
        hooks_json::entries(&text, event)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| is_ours(e))
            .filter_map(|e| serde_json::from_str(e).ok())
            .collect()
    };
    let pre = ours_in(HookEvent::PreToolUse.name());
    let entry = match pre.as_slice() {
        [] => {
            problems.push("no toolstream preToolUse hook: run `toolstream install cursor`".into());
            return (problems, notes);
        }
        [one] => one.clone(),
        [first, ..] => {
            problems.push(format!("{} toolstream preToolUse hooks; expected one (reinstall)", pre.len()));
            first.clone()
        }
    };
    let command = entry.get("command").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some((exe, hook_args)) = our_command(&entry.to_string()) else {
        problems.push("the hook's command is empty".into());
        return (problems, notes);
    };
    let sinks = sinks_of(&hook_args);
    let compacts = !hook_args.iter().any(|a| a == "--no-compact");
    if sinks.is_empty() {
        // The compaction hook alone.
        if entry.get("type").and_then(Value::as_str) != Some("command") {
            problems.push("the hook's `type` is not `command`".into());
        }
        if entry.get("matcher").and_then(Value::as_str) != Some("Shell") {
            problems.push("the hook's `matcher` is not `Shell`".into());
        }
    } else {
        for event in HookEvent::installed() {
            let found = ours_in(event.name());
            let same = found.iter().filter(|e| e.get("command").and_then(Value::as_str) == Some(&command)).count();
            if same != 1 {
                problems.push(format!(
                    "{}: {} toolstream entries with the hook's command; expected one (reinstall)",
                    event, same
                ));
            }
        }
    }
    let exe_path = Path::new(&exe);
    if !is_executable(exe_path) {
        if exe.contains('/') {
            problems.push(format!("the launcher `{exe}` does not exist or is not executable"));
        } else {
            problems.push(format!("the launcher `{exe}` is not a path to an executable"));
        }
        return (problems, notes);
    }
    let argv: Vec<String> =
        std::iter::once(exe.clone()).chain(HOOK_ARGS.iter().map(|s| (*s).to_owned())).chain(hook_args).collect();
    if let Err(e) = probe(&argv, compacts, !sinks.is_empty()) {
        problems.push(format!("the hook does not answer correctly: {e:#}"));
    }
    let config = Config::from_process_env(None).unwrap_or_else(|e| {
        problems.push(format!("the settings: {e} (the hook leaves it out)"));
        Config::defaults()
    });
    if compacts && ShellEnv::new(&config).host_shell(None).is_none() {
        problems.push(format!("no usable host shell ({CURSOR_SHELL_ENV}, SHELL, sh): commands would pass unwrapped"));
    }
    if sinks.is_empty() {
        return (problems, notes);
    }
    match check_spool() {
        Ok(note) => notes.push(note),
        Err(e) => problems.push(format!("the spool: {e}")),
    }
    for s in &sinks {
        match s.parse::<SinkSpec>().map_err(anyhow::Error::msg).and_then(|spec| check_sink(&spec, &config)) {
            Ok(note) => notes.push(format!("sink {s}: {note}")),
            Err(e) => problems.push(format!("sink {s}: {e:#}")),
        }
    }
    (problems, notes)
}

/// The spool folder exists (or can be made), is owner-only, and takes a write.
fn check_spool() -> anyhow::Result<String> {
    let paths = HookPaths::locate()?;
    toolstream_engine::state_dir::private_dir(&paths.spool_dir())?;
    let probe = paths.spool_dir().join(format!(".doctor-{}", std::process::id()));
    spool::write_private(&probe, b"ok").with_context(|| format!("cannot write in {}", paths.spool_dir().display()))?;
    let _ = std::fs::remove_file(&probe);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&paths.root)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!("{} is readable by others (mode {mode:o})", paths.root.display());
        }
    }
    Ok(format!("spool: {} (writable)", paths.spool_dir().display()))
}

/// A sink can be reached: a collector that answers, a sessions folder that takes a file.
fn check_sink(spec: &SinkSpec, config: &Config) -> anyhow::Result<String> {
    takes(spec).map_err(anyhow::Error::msg)?;
    match spec.kind {
        SinkKind::Otlp | SinkKind::OtlpGrpc => {
            let protocol = (spec.kind == SinkKind::OtlpGrpc).then_some(Protocol::Grpc);
            let endpoint = spec.path.as_ref().map(|p| p.display().to_string());
            let cfg = OtelConfig::new(endpoint.as_deref(), protocol, &config.otel_content().env)?;
            check_collector(&cfg)
        }
        SinkKind::PiSessions => {
            let root = match &spec.path {
                Some(d) => SessionsRoot::Flat(d.clone()),
                None => {
                    let home = std::env::var_os("HOME").map(PathBuf::from);
                    SessionsRoot::from_pi_env(|k| std::env::var(k).ok(), home.as_deref())?
                }
            };
            let dir = match &root {
                SessionsRoot::Flat(d) => d.clone(),
                SessionsRoot::PerCwd { agent_dir } => agent_dir.join("sessions"),
            };
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let probe = dir.join(format!(".toolstream-doctor-{}", std::process::id()));
            std::fs::write(&probe, b"").with_context(|| format!("cannot write in {}", dir.display()))?;
            let _ = std::fs::remove_file(&probe);
            Ok(format!("sessions go under {} (writable)", dir.display()))
        }
        _ => bail!("not a live sink"),
    }
}

/// The collector answers: an empty OTLP/HTTP export gets a 2xx; a gRPC endpoint accepts a
/// connection (TLS endpoints: the connection only).
fn check_collector(cfg: &OtelConfig) -> anyhow::Result<String> {
    let url = cfg.traces_url();
    let (tls, rest) = match url.split_once("://") {
        Some(("https", r)) => (true, r),
        Some((_, r)) => (false, r),
        None => (false, url.as_str()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host_port = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let addr = host_port.to_socket_addrs()?.next().with_context(|| format!("cannot resolve {authority}"))?;
    let mut stream =
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).with_context(|| format!("no collector at {host_port}"))?;
    if tls || cfg.protocol == Protocol::Grpc {
        return Ok(format!("{url} accepts connections"));
    }
    stream.set_read_timeout(Some(PROBE_TIMEOUT))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head)?;
    let status = String::from_utf8_lossy(&head[..n]);
    let code = status.split_whitespace().nth(1).unwrap_or("");
    if !code.starts_with('2') {
        bail!("{url} answered {}", status.lines().next().unwrap_or("nothing"));
    }
    Ok(format!("{url} answers ({code})"))
}

/// Run the installed hook on a sample shell call (spooling nothing) and check its answer.
fn probe(argv: &[String], compacts: bool, observing: bool) -> anyhow::Result<()> {
    let input = json!({
        "hook_event_name": "preToolUse",
        "tool_name": "Shell",
        "tool_input": { "command": "git status --short" }
    })
    .to_string();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .arg("--dry-run")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running {}", argv[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    let deadline = Instant::now() + PROBE_TIMEOUT;
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("no answer within {} s", PROBE_TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out)?;
    }
    let answer: Value = serde_json::from_str(out.trim()).with_context(|| format!("not JSON: {out:?}"))?;
    let cmd = answer.pointer("/updated_input/command").and_then(Value::as_str).unwrap_or_default();
    let ok = if compacts {
        answer["permission"] == "allow" && cmd.contains(" wrap -- ")
    } else if observing {
        answer == json!({})
    } else {
        answer["permission"] == "allow"
    };
    if !ok {
        bail!("unexpected answer {answer}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_entries_are_recognised_by_their_command() {
        assert!(is_ours(r#"{"command": "/usr/local/bin/toolstream hook cursor"}"#));
        assert!(is_ours(r#"{"command": "'/opt/my tools/toolstream' hook cursor"}"#));
        assert!(is_ours(
            r#"{"command": "/bin/toolstream hook cursor --sink 'otlp=http://127.0.0.1:4318' --no-compact"}"#
        ));
        assert!(!is_ours(r#"{"command": "tokenjuice cursor-pre-tool-use"}"#));
        assert!(!is_ours(r#"{"command": "toolstream hook claude"}"#));
        assert!(!is_ours(r#"{"command": "toolstream hook cursor | tee log"}"#));
        let (_, args) =
            our_command(r#"{"command": "/bin/toolstream hook cursor --sink 'otlp=http://h:1' --sink pi-sessions"}"#)
                .unwrap();
        assert_eq!(sinks_of(&args), ["otlp=http://h:1", "pi-sessions"]);
    }
}
