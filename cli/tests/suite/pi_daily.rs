//! pi daily use, with real pi, the extension in `integrations/pi` and a stand-in `cursor-agent`
//! (a script that prints a recorded stream-json run and logs how it was called): a second prompt
//! resumes the first prompt's Cursor chat (print mode with `-c`, and RPC mode); after a new
//! session it does not; in a fork the earlier conversation travels in the prompt; `/cursor-mode`
//! reaches cursor-agent; the model list comes from cursor-agent's listing; the extension holds
//! nothing of a run once it ended; the opt-outs of seed 000 (no replay tools: thinking traces;
//! no native wrappers: neutral cards; a wrapper name owned by another extension: traces).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::pi::{print_json, Rpc, PI_TIMEOUT};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

/// The Cursor chat of `examples/demo.jsonl` (its `system/init` `session_id`).
const DEMO_CHAT: &str = "5f1c2a9e-7b3d-4e21-9c8a-2d6f0e4b1a77";
/// What the engine puts in front of a flattened history (`toolstream_hosts::conversation`).
const HISTORY_HEADER: &str = toolstream_hosts::conversation::HISTORY_HEADER;
const REQUEST_HEADER: &str = toolstream_hosts::conversation::REQUEST_HEADER;

fn extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../integrations/pi").canonicalize().unwrap()
}

/// The stand-in: `--list-models` prints `$FAKE_MODELS` (or fails without it); any other call
/// appends its arguments (NUL-separated) as the next file of `$FAKE_CALLS` and prints `$FAKE_STREAM`.
fn stand_in(dir: &Path) -> PathBuf {
    let path = dir.join("cursor-agent");
    write_script(
        &path,
        "#!/bin/sh\n\
         if [ \"$1\" = \"--list-models\" ]; then\n\
           [ -n \"$FAKE_MODELS\" ] || { echo 'unknown option --list-models' >&2; exit 1; }\n\
           printf '%s\\n' \"$FAKE_MODELS\"; exit 0\n\
         fi\n\
         mkdir -p \"$FAKE_CALLS\"\n\
         n=$(ls \"$FAKE_CALLS\" | wc -l)\n\
         printf '%s\\0' \"$@\" > \"$FAKE_CALLS/call-$n.tmp\" && mv \"$FAKE_CALLS/call-$n.tmp\" \"$FAKE_CALLS/call-$n\"\n\
         cat \"$FAKE_STREAM\"\n",
    );
    path
}

/// Write an executable script.
fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run `check` with each installed pi (its launcher) and a fresh test home.
fn each_pi_home(check: impl Fn(&Path, &Home)) {
    common::each_pi(|pi| check(&pi.bin(), &Home::new()));
}

/// The arguments of each cursor-agent call so far, in order.
fn calls(dir: &Path) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for n in 0.. {
        let Ok(bytes) = std::fs::read(dir.join(format!("call-{n}"))) else { break };
        let text = String::from_utf8(bytes).unwrap();
        out.push(text.split('\0').filter(|s| !s.is_empty()).map(str::to_owned).collect());
    }
    out
}

fn option<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

struct Home {
    dir: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = common::tempdir();
        std::fs::create_dir_all(dir.join("agent")).unwrap();
        std::fs::create_dir_all(dir.join("work")).unwrap();
        std::fs::write(dir.join("agent/settings.json"), r#"{"retry":{"enabled":false}}"#).unwrap();
        stand_in(&dir);
        Home { dir }
    }

    fn calls_dir(&self) -> PathBuf {
        self.dir.join("calls")
    }

    fn pi(&self, pi: &Path) -> Command {
        let mut cmd = self.bare_pi(pi);
        cmd.env("PI_CODING_AGENT_DIR", self.dir.join("agent"))
            .env("TOOLSTREAM_BIN", env!("CARGO_BIN_EXE_toolstream"))
            .args(["--no-extensions", "-e"])
            .arg(extension())
            .args(["--provider", "cursor", "--model", "auto"]);
        cmd
    }

    /// pi in this home as a user runs it: its settings in `$HOME/.pi/agent`, no extension named,
    /// toolstream found the extension's own way; cursor-agent the stand-in.
    fn bare_pi(&self, pi: &Path) -> Command {
        let mut cmd = Command::new(pi);
        cmd.current_dir(self.dir.join("work"))
            .env_remove("PI_CODING_AGENT_DIR")
            .env("PI_OFFLINE", "1")
            .env("HOME", &self.dir)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("TOOLSTREAM_BIN")
            .env("TOOLSTREAM_CURSOR_AGENT", self.dir.join("cursor-agent"))
            .env("FAKE_CALLS", self.calls_dir())
            .env("FAKE_STREAM", common::example("demo.jsonl"))
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("TOOLSTREAM_CURSOR_REPLAY")
            .env_remove("TOOLSTREAM_CURSOR_MODELS")
            .env_remove("CURSOR_API_KEY");
        cmd
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// pi in print mode, JSON events; its last assistant message.
fn print_mode(mut cmd: Command, extra: &[&str], prompt: &str) -> Value {
    cmd.args(extra);
    print_json(cmd, prompt).unwrap_or_else(|e| panic!("pi failed: {e}")).last_message()
}

fn stopped(message: &Value) {
    assert_eq!(
        (message["role"].as_str(), message["stopReason"].as_str()),
        (Some("assistant"), Some("stop")),
        "{message}"
    );
}

/// The two install steps a user takes: `cargo install` (here: a `toolstream` in `~/.cargo/bin`
/// that notes each start, then runs the one cargo built) and `pi install SOURCE` (`git` holds the
/// variables that point git at a local copy of the repository); then pi, with no `-e` and no
/// `TOOLSTREAM_BIN`, runs a Cursor run through them. Returns pi's settings after the install.
fn install_and_run(pi: &Path, home: &Home, source: &std::ffi::OsStr, git: &[(String, String)]) -> Value {
    let cargo_bin = home.dir.join(".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).unwrap();
    let started = home.dir.join("toolstream-started");
    write_script(
        &cargo_bin.join("toolstream"),
        &format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\nexec '{}' \"$@\"\n",
            started.display(),
            env!("CARGO_BIN_EXE_toolstream")
        ),
    );
    let path = format!("{}:{}", cargo_bin.display(), std::env::var("PATH").unwrap_or_default());
    let agent_dir = home.dir.join(".pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(agent_dir.join("settings.json"), r#"{"retry":{"enabled":false}}"#).unwrap();

    let mut install = home.bare_pi(pi);
    install.env("PATH", &path).envs(git.iter().map(|(k, v)| (k, v))).arg("install").arg(source);
    let done = common::run_with_timeout(&mut install, None, PI_TIMEOUT).unwrap();
    assert_eq!(done.code, Some(0), "pi install failed: {}{}", done.stdout, done.stderr);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(agent_dir.join("settings.json")).unwrap()).unwrap();

    let mut run = home.bare_pi(pi);
    run.env("PATH", &path).args(["--provider", "cursor", "--model", "auto"]);
    let last = print_mode(run, &[], "fix the rounding bug");
    stopped(&last);
    assert_eq!(last["responseId"], DEMO_CHAT, "the recorded Cursor run's messages");
    let calls = calls(&home.calls_dir());
    assert_eq!(calls.len(), 1, "one cursor-agent run: {calls:?}");
    assert_eq!(calls[0].last().unwrap(), "fix the rounding bug");
    let starts = std::fs::read_to_string(&started).unwrap_or_default();
    assert!(starts.lines().any(|l| l == "pi-provider"), "the toolstream on PATH ran the run: {starts:?}");
    settings
}

#[test]
fn pi_install_registers_the_extension_and_it_finds_toolstream_on_path() {
    each_pi_home(|pi, home| {
        let settings = install_and_run(pi, home, extension().as_os_str(), &[]);
        // pi keeps a local package's path relative to its settings file.
        let packages = settings["packages"].as_array().expect("a packages list");
        assert_eq!(packages.len(), 1, "{settings}");
        let installed = home.dir.join(".pi/agent").join(packages[0].as_str().unwrap()).canonicalize().unwrap();
        assert_eq!(installed, extension(), "{settings}");
    });
}

/// `pi install git:github.com/…` as a user types it: pi clones the repository (git is pointed at
/// a repository made of this checkout's tracked files, as they are in the working tree) and
/// loads the extension the root `package.json` names; the extension finds `schemas/` in the clone.
#[test]
fn pi_install_from_git_registers_the_extension_of_the_repository() {
    const URL: &str = "https://github.com/toolstream/toolstream";
    each_pi_home(|pi, home| {
        let repo = home.dir.join("published");
        copy_tracked_files(&repo);
        let git = [
            ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
            ("GIT_CONFIG_KEY_0".to_owned(), format!("url.{}.insteadOf", repo.display())),
            ("GIT_CONFIG_VALUE_0".to_owned(), URL.to_owned()),
        ];
        let settings = install_and_run(pi, home, "git:github.com/toolstream/toolstream".as_ref(), &git);
        assert_eq!(settings["packages"], json!(["git:github.com/toolstream/toolstream"]), "{settings}");
        let clone = home.dir.join(".pi/agent/git/github.com/toolstream/toolstream");
        assert!(clone.join("integrations/pi/index.ts").is_file(), "pi cloned the repository into {}", clone.display());
    });
}

/// A git repository at `dest` holding every file this checkout tracks, with its working-tree
/// content: what a clone of the published repository holds. (A checkout without `.git`: every
/// file but the build and dependency folders, and `git add` leaves out what `.gitignore` says.)
fn copy_tracked_files(dest: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |dir: &Path, args: &[&str]| {
        let out = Command::new("git").current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    std::fs::create_dir_all(dest).unwrap();
    let listed = Command::new("git").current_dir(&root).args(["ls-files", "-z"]).output().unwrap();
    let names: Vec<PathBuf> = if listed.status.success() {
        let names = listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty());
        names.map(|n| PathBuf::from(std::str::from_utf8(n).unwrap())).collect()
    } else {
        files_below(&root, Path::new(""))
    };
    for name in names {
        let (from, to) = (root.join(&name), dest.join(&name));
        if from.is_file() {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    git(dest, &["init", "-q"]);
    git(dest, &["add", "-A"]);
    git(dest, &["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "published"]);
}

/// Files below `root/rel`, relative to `root`, without build output, installed dependencies and
/// fuzz corpora.
fn files_below(root: &Path, rel: &Path) -> Vec<PathBuf> {
    const SKIPPED: [&str; 6] = [".git", "target", ".deps", ".venv", "node_modules", "corpus"];
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root.join(rel)).unwrap().flatten() {
        let name = rel.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() && !SKIPPED.iter().any(|s| entry.file_name() == *s) {
            out.extend(files_below(root, &name));
        } else if kind.is_file() {
            out.push(name);
        }
    }
    out
}

#[test]
fn print_mode_continue_resumes_the_cursor_chat() {
    each_pi_home(|pi, home| {
        let first = print_mode(home.pi(pi), &[], "fix the rounding bug");
        stopped(&first);
        assert_eq!(first["responseId"], DEMO_CHAT, "the run's messages carry its Cursor chat");
        let second = print_mode(home.pi(pi), &["-c"], "now explain the fix — in one line");
        stopped(&second);
        let calls = calls(&home.calls_dir());
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(option(&calls[0], "--resume"), None);
        assert_eq!(calls[0].last().unwrap(), "fix the rounding bug");
        assert_eq!(option(&calls[1], "--resume"), Some(DEMO_CHAT));
        assert_eq!(calls[1].last().unwrap(), "now explain the fix — in one line", "the user's text, unchanged");
    });
}

#[test]
fn rpc_resumes_then_starts_anew_after_new_session_and_flattens_in_a_fork() {
    each_pi_home(|pi, home| {
        let mut rpc = Rpc::start(home.pi(pi));
        stopped(&rpc.prompt("p1", "fix the rounding bug"));
        stopped(&rpc.prompt("p2", "and add a test"));
        // Nothing of a finished run stays in the extension.
        let status = rpc.notification("s1", "/cursor-status");
        assert!(status.contains("recorded results 0; pending calls 0"), "{status}");

        // A fork from the second prompt: the conversation up to the first run, in a new session.
        let forks = rpc.call("f", json!({"type": "get_fork_messages"}));
        let second = forks["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["text"] == "and add a test")
            .unwrap()
            .clone();
        rpc.call("fork", json!({"type": "fork", "entryId": second["entryId"]}));
        stopped(&rpc.prompt("p3", "use integer cents instead"));

        // A new session: nothing carries over; and Cursor's mode reaches cursor-agent.
        rpc.call("n", json!({"type": "new_session"}));
        let mode = rpc.notification("m", "/cursor-mode plan");
        assert_eq!(mode, "Cursor mode: plan");
        stopped(&rpc.prompt("p4", "start over"));

        let calls = calls(&home.calls_dir());
        assert_eq!(calls.len(), 4, "{calls:?}");
        assert_eq!(option(&calls[0], "--resume"), None);
        assert_eq!(option(&calls[1], "--resume"), Some(DEMO_CHAT), "{:?}", calls[1]);
        assert_eq!(calls[1].last().unwrap(), "and add a test");
        // The fork: no resume; the first exchange travels in the prompt, the new text last.
        assert_eq!(option(&calls[2], "--resume"), None, "{:?}", calls[2]);
        let prompt = calls[2].last().unwrap();
        assert!(prompt.starts_with(HISTORY_HEADER), "{prompt}");
        assert!(prompt.contains("[user]\nfix the rounding bug\n"), "{prompt}");
        assert!(prompt.contains("[assistant]\n"), "{prompt}");
        assert!(!prompt.contains("and add a test"), "the abandoned branch is not history: {prompt}");
        assert!(prompt.ends_with(&format!("{REQUEST_HEADER}\nuse integer cents instead")), "{prompt}");
        // After the new session: the prompt alone, in plan mode.
        assert_eq!(option(&calls[3], "--resume"), None);
        assert_eq!(calls[3].last().unwrap(), "start over");
        assert!(calls[3].iter().any(|a| a == "--mode=plan"), "{:?}", calls[3]);
        assert!(
            !calls[0].iter().any(|a| a.starts_with("--mode=")),
            "agent mode is cursor-agent's default: {:?}",
            calls[0]
        );
    });
}

#[test]
fn the_model_list_comes_from_cursor_agents_listing() {
    each_pi_home(|pi, home| {
        let mut cmd = home.pi(pi);
        cmd.env("FAKE_MODELS", "Available models\n\nauto - Auto (current)\ncomposer-2 - Composer 2\ngpt-5 - GPT-5\n");
        let mut rpc = Rpc::start(cmd);
        let ours: Vec<(String, u64)> = cursor_models(&mut rpc)
            .iter()
            .map(|m| (m["id"].as_str().unwrap().to_owned(), m["contextWindow"].as_u64().unwrap()))
            .collect();
        let table = toolstream_schemas::models::ModelTable::default();
        let expected: Vec<(String, u64)> = ["auto", "composer-2", "gpt-5"]
            .iter()
            .map(|id| (id.to_string(), table.limits(Some(id)).context_window))
            .collect();
        assert_eq!(ours, expected);
        // Cached for a day: asked again without a listing, the same list comes back.
        drop(rpc);
        let mut rpc = Rpc::start(home.pi(pi));
        let ids: Vec<Value> = cursor_models(&mut rpc).iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, ["auto", "composer-2", "gpt-5"]);
        // Without a listing and without a cache: the environment's ids.
        std::fs::remove_dir_all(home.dir.join(".cache")).unwrap();
        drop(rpc);
        let mut cmd = home.pi(pi);
        cmd.env("TOOLSTREAM_CURSOR_MODELS", "composer-2, x-1");
        let mut rpc = Rpc::start(cmd);
        let ids: Vec<Value> = cursor_models(&mut rpc).iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, ["auto", "composer-2", "x-1"]);
    });
}

/// The models pi lists for the `cursor` provider.
fn cursor_models(rpc: &mut Rpc) -> Vec<Value> {
    let models = rpc.call("m", json!({"type": "get_available_models"}));
    models["data"]["models"].as_array().unwrap().iter().filter(|m| m["provider"] == "cursor").cloned().collect()
}

/// pi's JSON-mode run of the demo with `env`; the assistant messages it ended.
fn demo_messages(home: &Home, pi: &Path, env: &[(&str, &str)], extra: &[&str]) -> Vec<Value> {
    let mut cmd = home.pi(pi);
    cmd.envs(env.iter().copied()).args(extra);
    assistant_messages(cmd)
}

/// Run `cmd` (pi) on the demo prompt in JSON mode; the assistant messages it ended.
fn assistant_messages(mut cmd: Command) -> Vec<Value> {
    cmd.args(["--mode", "json", "-p", "fix the rounding bug"]);
    let done = common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap();
    assert_eq!(done.code, Some(0), "pi failed: {}", done.stderr);
    assert!(!done.stdout.contains("OTHER READ RAN"), "another extension's read never runs for a replay");
    done.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .map(|e| e["message"].clone())
        .collect()
}

/// The demo's calls as the engine shows them: `(pi tool, "<title> <summary>")` per call, in order
/// (the tool from the session file toolstream writes, the title and summary from the neutral
/// cards pi gets without native wrappers).
fn demo_calls(home: &Home, pi: &Path) -> Vec<(String, String)> {
    let dir = common::tempdir();
    let session = dir.join("s.jsonl");
    let demo = common::example("demo.jsonl");
    let run = common::toolstream(
        &["replay", "--sink", &format!("pi-session={}", session.display()), demo.to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&session).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let tools: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| e["message"]["toolName"].as_str().unwrap().to_owned())
        .collect();
    let neutral = demo_messages(home, pi, &[("PI_CURSOR_REGISTER_NATIVE_TOOLS", "0")], &[]);
    let heads: Vec<String> = neutral
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| {
            let title = b["arguments"]["activityTitle"].as_str().unwrap();
            match b["arguments"]["activitySummary"].as_str().filter(|s| !s.is_empty()) {
                Some(s) => format!("{title} {s}"),
                None => title.to_owned(),
            }
        })
        .collect();
    assert_eq!(tools.len(), heads.len(), "{tools:?} {heads:?}");
    tools.into_iter().zip(heads).collect()
}

/// How many lines of `trace` are the trace head `head` (an error's head ends with ` (error)`).
fn traces_of(trace: &str, head: &str) -> usize {
    trace.lines().filter(|l| *l == head || l.strip_suffix(" (error)") == Some(head)).count()
}

fn tool_calls(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect()
}

fn thinking(messages: &[Value]) -> String {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "thinking")
        .map(|b| b["thinking"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn without_native_tool_display_every_call_is_a_thinking_trace() {
    each_pi_home(|pi, home| {
        let calls = demo_calls(home, pi);
        assert!(calls.len() >= 5, "{calls:?}");
        let messages = demo_messages(home, pi, &[("PI_CURSOR_NATIVE_TOOL_DISPLAY", "0")], &[]);
        assert_eq!(tool_calls(&messages), Vec::<String>::new(), "no replay tool calls at all");
        let last = messages.last().unwrap();
        stopped(last);
        let trace = thinking(&messages);
        for (_, head) in &calls {
            assert_eq!(traces_of(&trace, head), 1, "one trace for {head:?} in {trace}");
        }
        assert!(trace.contains("Command exited with code 1"), "the failing npm test's output is in its trace: {trace}");
        // `false` is off too, as the engine reads booleans.
        let messages = demo_messages(home, pi, &[("PI_CURSOR_NATIVE_TOOL_DISPLAY", "false")], &[]);
        assert_eq!(tool_calls(&messages), Vec::<String>::new(), "false: no replay tool calls");
    });
}

/// The extension's boolean switches (`integrations/pi/env.ts`, run by pi's own TypeScript loader)
/// read every value of one table as the engine's settings do (`config::parse_bool`).
#[test]
fn the_extension_reads_booleans_as_the_engine_does() {
    let values = [
        "1",
        "0",
        "true",
        "false",
        "TRUE",
        "False",
        "yes",
        "No",
        "on",
        "OFF",
        " on ",
        "\toff\n",
        "\u{85}1",
        "\u{3000}yes",
        "\u{feff}1",
        "",
        " ",
        "2",
        "-1",
        "y",
        "n",
        "t",
        "f",
        "enabled",
        "truee",
        "o n",
        "\u{130}",
        "ＴＲＵＥ",
    ];
    let env_ts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../integrations/pi/env.ts");
    common::each_pi(|pi| {
        let jiti = pi.dir.join("node_modules/jiti/lib/jiti.mjs");
        let script = format!(
            "import {{ createJiti }} from {jiti:?};\n\
             const m = await createJiti(import.meta.url).import({env_ts:?});\n\
             const values = JSON.parse(process.argv[1]);\n\
             console.log(JSON.stringify(values.map((v) => m.parseBool(v) ?? null)));\n",
            jiti = jiti.display().to_string(),
            env_ts = env_ts.display().to_string(),
        );
        let mut cmd = Command::new(pi.node());
        cmd.args(["--input-type=module", "-e", &script, &serde_json::to_string(&values).unwrap()]);
        let done = common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap();
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        let theirs: Vec<Option<bool>> = serde_json::from_str(done.stdout.trim()).unwrap();
        let ours: Vec<Option<bool>> = values.iter().map(|v| toolstream_engine::config::parse_bool(v)).collect();
        for ((v, t), o) in values.iter().zip(&theirs).zip(&ours) {
            assert_eq!(t, o, "{v:?}: the extension reads {t:?}, the engine {o:?}");
        }
        assert_eq!(theirs.len(), values.len());
    });
}

#[test]
fn without_native_wrappers_native_calls_are_neutral_cards() {
    each_pi_home(|pi, home| {
        let calls = demo_calls(home, pi);
        assert!(calls.iter().any(|(t, _)| t != "cursor"), "the demo has native calls: {calls:?}");
        let messages = demo_messages(home, pi, &[("PI_CURSOR_REGISTER_NATIVE_TOOLS", "0")], &[]);
        assert_eq!(tool_calls(&messages), vec!["cursor".to_owned(); calls.len()], "every call as the neutral card");
        stopped(messages.last().unwrap());
    });
}

#[test]
fn a_wrapper_owned_by_another_extension_falls_back_to_a_trace() {
    each_pi_home(|pi, home| {
        // Another extension that registers `read` first.
        let other = home.dir.join("other-ext");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("index.ts"),
            "import { Type } from \"typebox\";\n\
             export default function (pi: any) {\n\
               pi.registerTool({ name: \"read\", label: \"read\", description: \"someone else's read\",\n\
                 parameters: Type.Object({ path: Type.String() }),\n\
                 async execute() { return { content: [{ type: \"text\", text: \"OTHER READ RAN\" }], details: {} }; } });\n\
             }\n",
        )
        .unwrap();
        let calls = demo_calls(home, pi);
        let cmd = home.pi(pi);
        // Load order: the other extension first, then ours (pi keeps the first `read`).
        let args: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_owned()).collect();
        let ours = args.iter().position(|a| a == "-e").unwrap() + 1;
        let mut cmd2 = Command::new(cmd.get_program());
        cmd2.current_dir(home.dir.join("work"));
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => cmd2.env(k, v),
                None => cmd2.env_remove(k),
            };
        }
        cmd2.args(&args[..ours - 1]).arg("-e").arg(&other).arg("-e").arg(&args[ours]).args(&args[ours + 1..]);
        let messages = assistant_messages(cmd2);
        let expected: Vec<String> = calls.iter().filter(|(t, _)| t != "read").map(|(t, _)| t.clone()).collect();
        assert_eq!(tool_calls(&messages), expected, "every call but the read is a replay tool call");
        let (_, read_head) = calls.iter().find(|(t, _)| t == "read").unwrap();
        assert_eq!(traces_of(&thinking(&messages), read_head), 1, "the read shows as a trace");
        stopped(messages.last().unwrap());
    });
}

#[test]
fn a_malformed_backend_line_is_reported_not_dropped_silently() {
    each_pi_home(|pi, home| {
        // A toolstream that says something that is not protocol before the real run.
        let wrapper = home.dir.join("noisy-toolstream");
        write_script(
            &wrapper,
            &format!(
                "#!/bin/sh\n[ \"$1\" = pi-provider ] && echo 'oops: not a protocol line'\nexec '{}' \"$@\"\n",
                env!("CARGO_BIN_EXE_toolstream")
            ),
        );
        let mut cmd = home.pi(pi);
        cmd.env("TOOLSTREAM_BIN", &wrapper).args(["--mode", "json", "-p", "fix the rounding bug"]);
        let done = common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap();
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        assert!(
            done.stderr
                .contains("toolstream pi-provider sent a line that is not JSON (ignored): oops: not a protocol line"),
            "{}",
            done.stderr
        );
        assert!(done.stdout.contains("\"stopReason\":\"stop\""), "the run still completes");
    });
}

/// The project's virtualenv python (scripts/install-py), with the official MCP SDK.
fn venv_python() -> Option<PathBuf> {
    common::python(&["mcp"])
}

#[test]
fn cursor_calls_a_pi_tool_through_the_bridge_inside_the_run() {
    bridged_call_through_pi(false);
}

/// The call reaches the bridge before the run's first line reaches the provider's sink (as it did
/// under load, once in a whole-suite run, and the call was dropped: pi waited for ever): it waits
/// for the run to open, then goes to pi as before.
#[test]
fn a_bridged_call_that_comes_before_the_run_opened_waits_for_it() {
    bridged_call_through_pi(true);
}

/// pi runs its own tool for a stand-in cursor-agent that calls it over MCP, the call sent before
/// the run's first line when `early`.
fn bridged_call_through_pi(early: bool) {
    let Some(python) = venv_python() else { return };
    each_pi_home(|pi, home| {
        // A stand-in cursor-agent that calls pi's tool over MCP, as Cursor does.
        let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/cursor_agent_bridge.py");
        let agent = home.dir.join("cursor-agent-mcp");
        write_script(&agent, &format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", python.display(), client.display()));
        // The user's own MCP configuration, which must stay as it is.
        std::fs::create_dir_all(home.dir.join(".cursor")).unwrap();
        let own = r#"{"mcpServers":{"mine":{"command":"my-server"}}}"#;
        std::fs::write(home.dir.join(".cursor/mcp.json"), own).unwrap();
        // A pi tool of another extension: the one Cursor calls.
        let ext = home.dir.join("tools-ext");
        std::fs::create_dir_all(&ext).unwrap();
        let marker = home.dir.join("reindexed.txt");
        std::fs::write(
            ext.join("index.ts"),
            format!(
                "import fs from \"node:fs\";\nimport {{ Type }} from \"typebox\";\n\
                 export default function (pi: any) {{\n\
                   pi.registerTool({{ name: \"sem_reindex\", label: \"sem_reindex\", description: \"Rebuild the semantic index of a folder\",\n\
                     parameters: Type.Object({{ path: Type.String() }}),\n\
                     async execute(_id: string, params: any) {{\n\
                       fs.appendFileSync({marker:?}, params.path + \"\\n\");\n\
                       return {{ content: [{{ type: \"text\", text: `reindexed ${{params.path}}: 42 files` }}], details: {{}} }};\n\
                     }} }});\n\
                 }}\n",
                marker = marker.display().to_string()
            ),
        )
        .unwrap();
        let log = home.dir.join("agent-log.json");
        // Should it hang (once, in a whole-suite run): how far the stand-in and the bridge got.
        let (trail, bridge_log) = (home.dir.join("trail.txt"), home.dir.join("bridge.jsonl"));
        let mut cmd = home.pi(pi);
        cmd.env("TOOLSTREAM_CURSOR_AGENT", &agent)
            .env("FAKE_LOG", &log)
            .env("FAKE_TOOL", "sem_reindex")
            .env("FAKE_ARGS", r#"{"path":"src"}"#)
            .env("FAKE_TRACE", &trail)
            .env("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE", &bridge_log)
            .env("FAKE_CALL_BEFORE_INIT", if early { "1" } else { "" })
            .arg("-e")
            .arg(&ext)
            .args(["--mode", "json", "-p", "reindex src with the project's tool"]);
        let done = common::run_with_timeout(&mut cmd, None, PI_TIMEOUT).unwrap_or_else(|e| {
            let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
            panic!("{e}\nthe stand-in's steps:\n{}\nthe bridge's log:\n{}", read(&trail), read(&bridge_log))
        });
        assert_eq!(done.code, Some(0), "pi failed: {}", done.stderr);
        if early {
            let steps = std::fs::read_to_string(&trail).unwrap();
            assert!(steps.contains("call queued before the run's first line"), "{steps}");
        }
        let events: Vec<Value> =
            done.stdout.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
        // pi ran its own tool, as its own tool execution, for a bridged call id.
        let start = events
            .iter()
            .find(|e| e["type"] == "tool_execution_start" && e["toolName"] == "sem_reindex")
            .unwrap_or_else(|| panic!("no execution of sem_reindex: {}", done.stdout));
        let id = start["toolCallId"].as_str().unwrap();
        assert!(id.starts_with("cursor-pi-bridge-run-") && id.len() <= 64, "{id}");
        assert_eq!(start["args"], json!({"path": "src"}));
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "src\n", "the tool ran once");
        // The MCP client (Cursor's side) got pi's result, inside the same run.
        let logged: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        assert_eq!(logged["result_text"], "reindexed src: 42 files", "{logged}");
        assert_eq!(logged["result_is_error"], false);
        assert_eq!(logged["listed"], json!(["pi__sem_reindex"]), "built-ins and the replay tools are not exposed");
        assert_eq!(logged["mcp_json_servers"], json!(["mine", "pi-tools"]), "the user's servers plus the bridge");
        assert!(logged["argv"].as_array().unwrap().iter().any(|a| a == "--approve-mcps"), "{logged}");
        // The run then finishes with `stop`, quoting the result; Cursor's own record of the call is
        // not a card (pi showed the real call).
        let end = events.iter().rev().find(|e| e["type"] == "agent_end").unwrap();
        let messages = end["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        stopped(last);
        assert!(last.to_string().contains("The tool said: reindexed src: 42 files"), "{last}");
        let calls: Vec<&Value> = messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["content"].as_array().unwrap().iter())
            .filter(|b| b["type"] == "toolCall")
            .collect();
        assert_eq!(calls.len(), 1, "one tool call, the bridged one: {calls:?}");
        // The user's file is as it was, and the run's own home is gone.
        assert_eq!(std::fs::read_to_string(home.dir.join(".cursor/mcp.json")).unwrap(), own);
    });
}
