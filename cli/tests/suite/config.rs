//! `toolstream config` on the real binary: defaults, file discovery, env over file, errors that
//! name the variable or key, and the API key never printed. Each run starts from an empty
//! environment with `HOME`/`XDG_CONFIG_HOME` and the working directory in a fresh temp folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

struct Out {
    stdout: String,
    stderr: String,
    code: i32,
}

/// A fresh temporary directory with `home/`, `xdg/` and `cwd/` inside; removed on drop.
struct Tmp(PathBuf);

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(tag: &str) -> Tmp {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolstream-config-it-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["home", "xdg", "cwd"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    Tmp(dir)
}

/// Run `toolstream config <args>` in `dir/cwd` with only `vars` (plus HOME and XDG_CONFIG_HOME
/// inside `dir`) in the environment.
fn config(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Out {
    let all: Vec<&str> = std::iter::once("config").chain(args.iter().copied()).collect();
    toolstream_in(dir, &all, vars)
}

fn json(dir: &Path, vars: &[(&str, &str)]) -> Value {
    let out = config(dir, &["--json"], vars);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn defaults_without_file_or_env() {
    let dir = temp_dir("defaults");
    let j = json(&dir, &[]);
    assert_eq!(j["config_file"]["value"], Value::Null);
    assert!(j["shards"]["value"].as_u64().unwrap() >= 1);
    assert_eq!(j["shards"]["origin"], "default");
    assert_eq!(j["shards"]["env"], "TOOLSTREAM_SHARDS");
    assert_eq!(j["lifecycle_defer_ms"]["value"], 75);
    assert_eq!(j["batch_settle_ms"]["value"], 75);
    assert_eq!(j["usage_wait_ms"]["value"], 125);
    assert_eq!(j["usage_poll_ms"]["value"], 25);
    assert_eq!(j["trace_enabled"]["value"], false);
    assert_eq!(j["trace_file"]["value"], "toolstream-trace.jsonl");
    assert_eq!(j["trace_limit_bytes"]["value"], 2_097_152);
    assert_eq!(j["api_key"]["value"], "(unset)");
    assert_eq!(j["jsonl_when_full"]["value"], "block");
    assert_eq!(j["bridge_call_timeout_ms"]["value"], 3_600_000);
    assert_eq!(
        j["bridge_call_timeout_ms"]["rule"],
        "≥ 1; may only lower bridge_tool_timeout_ms (default: its value); a bad value is a warning and is ignored"
    );
    assert_eq!(j["otlp_headers"]["value"], "(unset)");
    // What only the pi extension reads is not listed as if toolstream did.
    assert!(j.get("native_tool_display").is_none());
}

#[test]
fn env_overrides_the_local_file_which_overrides_defaults() {
    let dir = temp_dir("layers");
    std::fs::write(dir.join("cwd/toolstream.toml"), "lifecycle_defer_ms = 50\nbatch_settle_ms = 10\n").unwrap();
    let j = json(&dir, &[("TOOLSTREAM_LIFECYCLE_DEFER_MS", "20"), ("TOOLSTREAM_PI_SESSION_WHEN_FULL", "drop_newest")]);
    assert_eq!(j["config_file"]["value"], "./toolstream.toml");
    assert_eq!(j["lifecycle_defer_ms"]["value"], 20);
    assert_eq!(j["lifecycle_defer_ms"]["origin"], "env TOOLSTREAM_LIFECYCLE_DEFER_MS");
    assert_eq!(j["batch_settle_ms"]["value"], 10);
    assert_eq!(j["batch_settle_ms"]["origin"], "file ./toolstream.toml (batch_settle_ms)");
    assert_eq!(j["usage_wait_ms"]["origin"], "default");
    assert_eq!(j["pi_session_when_full"]["value"], "drop_newest");
}

#[test]
fn user_config_dir_and_explicit_file() {
    let dir = temp_dir("xdg");
    std::fs::create_dir_all(dir.join("xdg/toolstream")).unwrap();
    std::fs::write(dir.join("xdg/toolstream/config.toml"), "usage_poll_ms = 5\n").unwrap();
    let j = json(&dir, &[]);
    assert_eq!(j["usage_poll_ms"]["value"], 5);
    assert!(j["config_file"]["value"].as_str().unwrap().ends_with("xdg/toolstream/config.toml"));

    let other = dir.join("other.toml");
    std::fs::write(&other, "usage_poll_ms = 7\n").unwrap();
    let out = config(&dir, &["--json", "--config", other.to_str().unwrap()], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(j["usage_poll_ms"]["value"], 7);
    assert_eq!(j["config_file"]["origin"], "flag --config");

    let j = json(&dir, &[("TOOLSTREAM_CONFIG", other.to_str().unwrap())]);
    assert_eq!(j["config_file"]["origin"], "env TOOLSTREAM_CONFIG");
}

#[test]
fn api_key_is_never_printed() {
    let dir = temp_dir("key");
    let key = "sk-integration-secret-4242";
    let out = config(&dir, &["--json"], &[("CURSOR_API_KEY", key)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key));
    let j: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(j["api_key"]["value"], "(set)");
    assert_eq!(j["api_key"]["origin"], "env CURSOR_API_KEY");

    let out = config(&dir, &[], &[("CURSOR_API_KEY", key)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key));
    assert!(out.stdout.contains("(set)"));
}

#[test]
fn table_output() {
    let dir = temp_dir("table");
    let out = config(&dir, &[], &[("TOOLSTREAM_SHARDS", "3")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("config file: none\n"), "{}", out.stdout);
    let header = out.stdout.lines().find(|l| l.starts_with("NAME")).unwrap();
    for col in ["VALUE", "FROM", "ENV"] {
        assert!(header.contains(col), "{header}");
    }
    let shards = out.stdout.lines().find(|l| l.starts_with("shards ")).unwrap();
    assert!(shards.contains(" 3 ") && shards.contains("env TOOLSTREAM_SHARDS"), "{shards}");
}

#[test]
fn errors_name_the_variable_or_key_and_exit_2() {
    let dir = temp_dir("errors");
    let out = config(&dir, &["--json"], &[("PI_CURSOR_SDK_EVENT_DEBUG", "maybe")]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("PI_CURSOR_SDK_EVENT_DEBUG") && out.stderr.contains("maybe"), "{}", out.stderr);

    let out = config(&dir, &["--json"], &[("TOOLSTREAM_BATCH_SETTLE_MS", "soon")]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("TOOLSTREAM_BATCH_SETTLE_MS"), "{}", out.stderr);

    std::fs::write(dir.join("cwd/toolstream.toml"), "shards = 2\nshardz = 3\n").unwrap();
    let out = config(&dir, &["--json"], &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`shardz`") && out.stderr.contains("./toolstream.toml:2"), "{}", out.stderr);

    std::fs::write(dir.join("cwd/toolstream.toml"), "api_key = \"sk-in-file\"\n").unwrap();
    let out = config(&dir, &["--json"], &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("CURSOR_API_KEY") && !out.stderr.contains("sk-in-file"), "{}", out.stderr);

    let out = config(&dir, &["--json", "--config", "missing.toml"], &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.toml") && out.stderr.contains("does not exist"), "{}", out.stderr);
}

/// Run `toolstream <args>` in `dir/cwd` with only `vars` (plus HOME and XDG_CONFIG_HOME inside
/// `dir`) in the environment.
fn toolstream_in(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Out {
    toolstream_fed(dir, args, vars, None)
}

/// [`toolstream_in`] with `stdin` on its standard input (else none).
fn toolstream_fed(dir: &Path, args: &[&str], vars: &[(&str, &str)], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.args(args).current_dir(dir.join("cwd")).env_clear();
    cmd.env("HOME", dir.join("home")).env("XDG_CONFIG_HOME", dir.join("xdg"));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = match stdin {
        None => cmd.output().unwrap(),
        Some(text) => {
            use std::io::Write;
            let mut child = cmd
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        }
    };
    Out {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// How to see that one setting does something: the command and variables of a run with the
/// setting changed, what to compare with the same run at its default, and a check of the change.
struct Observer {
    args: Vec<String>,
    vars: Vec<(&'static str, String)>,
    /// Both runs get these.
    common: Vec<(&'static str, String)>,
    /// What is compared: stdout, stderr or a file under `cwd` (read after each run).
    look: Look,
    check: fn(&str) -> bool,
    /// The exit status both runs must have: 0, or 1 where the observer's sink cannot deliver (no
    /// collector listens: spans are lost, and a loss is exit 1).
    code: i32,
    /// What both runs read on stdin (none: a closed stdin).
    stdin: Option<&'static str>,
    /// Arguments the run with the setting changed adds (a setting only a flag sets).
    set_args: Vec<&'static str>,
}

enum Look {
    Stdout,
    Stderr,
    File(&'static str),
}

fn observer(name: &str, dir: &Path) -> Option<Observer> {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo.jsonl").display().to_string();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sdk-demo.jsonl").display().to_string();
    let cards = |input: &str| vec!["replay".to_owned(), "--color".into(), "never".into(), input.to_owned()];
    let traced = |input: &str| vec!["replay".into(), "--sink".into(), "jsonl=t.jsonl".into(), input.to_owned()];
    let debug = || vec![("TOOLSTREAM_LOG", "debug".to_owned())];
    // 192.0.2.1 (TEST-NET-1) is no address of this machine: binding it fails after the start.
    let serve_unbound = || ["serve", "openai", "--addr", "192.0.2.1:9"].map(String::from).to_vec();
    let o = |args, vars: Vec<(&'static str, &str)>, common, look, check| Observer {
        args,
        vars: vars.into_iter().map(|(k, v)| (k, v.to_owned())).collect(),
        common,
        look,
        check,
        code: 0,
        stdin: None,
        set_args: Vec::new(),
    };
    // `serve openai` with a flag, logging its limits before it fails to bind (exit 2).
    let serve_flag = |flag: &'static str, value: &'static str, check: fn(&str) -> bool| {
        let mut ob = o(serve_unbound(), vec![], debug(), Look::Stderr, check);
        ob.set_args = vec![flag, value];
        ob.code = 2;
        ob
    };
    // `toolstream bridge` on a tools file of one tool named `tool` (stdin closed: it lists its
    // endpoint, or says why not, then ends). The file is this setting's own: observers run side by
    // side, and one rewriting a file another's run is reading made that run fail (exit 2).
    let bridge = |tool: &str| {
        let file = dir.join(format!("tools-{name}.json"));
        let def = serde_json::json!([{"name": tool, "description": "d", "parameters": {"type": "object"}}]);
        std::fs::write(&file, def.to_string()).unwrap();
        vec!["bridge".to_owned(), "--tools".into(), file.display().to_string()]
    };
    // An OTLP sink named without a URL (the collector the settings name); none listens on port 9.
    let otlp = || ["replay", "--sink", "otlp", &demo].map(String::from).to_vec();
    let discard = || vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9".to_owned())];
    let debug_discard = || [debug(), discard()].concat();
    // Both runs lose their spans (exit 1): no collector listens.
    let lossy = |vars, common, check| Observer { code: 1, ..o(otlp(), vars, common, Look::Stderr, check) };
    Some(match name {
        "config_file" => {
            let other = dir.join("other.toml");
            std::fs::write(&other, "lifecycle_defer_ms = 100000\n").unwrap();
            let path = other.display().to_string();
            let mut ob = o(cards(&demo), vec![], vec![], Look::Stdout, |out| !out.contains("… Cursor shell"));
            ob.vars.push(("TOOLSTREAM_CONFIG", path));
            ob
        }
        "shards" => {
            o(cards(&demo), vec![("TOOLSTREAM_SHARDS", "13")], debug(), Look::Stderr, |e| e.contains("shards=13"))
        }
        "max_line_bytes" => {
            let mut ob = o(cards(&demo), vec![], debug(), Look::Stderr, |e| e.contains("max_line_bytes=1048576"));
            ob.set_args = vec!["--max-line-bytes", "1M"];
            ob
        }
        "lifecycle_defer_ms" => {
            o(cards(&demo), vec![("TOOLSTREAM_LIFECYCLE_DEFER_MS", "100000")], vec![], Look::Stdout, |out| {
                !out.contains("… Cursor shell")
            })
        }
        "batch_settle_ms" => {
            o(traced(&demo), vec![("TOOLSTREAM_BATCH_SETTLE_MS", "0")], vec![], Look::File("t.jsonl"), |_| true)
        }
        "usage_wait_ms" => {
            o(traced(&sdk), vec![("TOOLSTREAM_USAGE_WAIT_MS", "0")], vec![], Look::File("t.jsonl"), |_| true)
        }
        "usage_poll_ms" => {
            o(traced(&sdk), vec![("TOOLSTREAM_USAGE_POLL_MS", "100")], vec![], Look::File("t.jsonl"), |_| true)
        }
        "trace_enabled" => o(
            cards(&demo),
            vec![("PI_CURSOR_SDK_EVENT_DEBUG", "1")],
            vec![],
            Look::File("toolstream-trace.jsonl"),
            |t| t.contains("run_opened"),
        ),
        "trace_file" => o(
            cards(&demo),
            vec![("TOOLSTREAM_TRACE_FILE", "mine.jsonl")],
            vec![("PI_CURSOR_SDK_EVENT_DEBUG", "1".to_owned())],
            Look::File("mine.jsonl"),
            |t| t.contains("run_opened"),
        ),
        "trace_limit_bytes" => {
            o(traced(&demo), vec![("TOOLSTREAM_TRACE_LIMIT_BYTES", "600")], vec![], Look::File("t.jsonl"), |t| {
                t.ends_with("{\"type\":\"artifact_truncated\",\"limitBytes\":600}\n")
            })
        }
        "models_file" => {
            let file = dir.join("models.json");
            std::fs::write(&file, r#"{"models": {"composer-2": {"contextWindow": 10, "maxTokens": 5}}}"#).unwrap();
            let mut ob = o(traced(&sdk), vec![], vec![], Look::File("t.jsonl"), |t| !t.contains("\"source\":\"sdk\""));
            ob.vars.push(("TOOLSTREAM_MODELS_FILE", file.display().to_string()));
            ob
        }
        // No cursor-agent to ask: the listed ids are offered.
        "cursor_models" => {
            let args = ["models", "--json", "--cursor-agent", "/nonexistent/cursor-agent"].map(String::from).to_vec();
            o(args, vec![("TOOLSTREAM_CURSOR_MODELS", "x-test-model")], vec![], Look::Stdout, |out| {
                out.contains("\"id\":\"x-test-model\"")
            })
        }
        "log" => o(cards(&demo), vec![("TOOLSTREAM_LOG", "debug")], vec![], Look::Stderr, |e| e.contains(" DEBUG ")),
        // `serve openai` on an address no interface has: it says its key and origins, then fails.
        "openai_api_key" => {
            let mut ob = o(serve_unbound(), vec![("TOOLSTREAM_OPENAI_API_KEY", "k-1")], vec![], Look::Stderr, |e| {
                e.contains("Bearer <the key you gave>")
            });
            ob.code = 2;
            ob
        }
        "openai_allowed_origins" => {
            let origin = ("TOOLSTREAM_OPENAI_ALLOWED_ORIGINS", "http://app.test");
            let mut ob = o(serve_unbound(), vec![origin], vec![], Look::Stderr, |e| {
                e.contains("browser origins allowed: http://app.test")
            });
            ob.code = 2;
            ob
        }
        // The named cursor-agent is the one asked for its models.
        "cursor_agent" => {
            let agent = dir.join("fake-cursor-agent");
            std::fs::write(&agent, "#!/bin/sh\necho 'fake-model-9 - Fake 9'\n").unwrap();
            let mut perms = std::fs::metadata(&agent).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            std::fs::set_permissions(&agent, perms).unwrap();
            let args = ["models", "--json"].map(String::from).to_vec();
            let mut ob = o(args, vec![], vec![], Look::Stdout, |out| out.contains("\"id\":\"fake-model-9\""));
            ob.vars.push(("TOOLSTREAM_CURSOR_AGENT", agent.display().to_string()));
            ob
        }
        // Scrubbed from the MCP card (the assistant's own text is never scrubbed, SPEC §8).
        "api_key" => o(cards(&demo), vec![("CURSOR_API_KEY", "SAVE10")], vec![], Look::Stdout, |out| {
            out.contains("{\"code\":\"[redacted]\"")
        }),
        "cards_when_full" => {
            o(cards(&demo), vec![("TOOLSTREAM_CARDS_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=cards when_full=drop_newest")
            })
        }
        "jsonl_when_full" => {
            o(traced(&demo), vec![("TOOLSTREAM_JSONL_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=jsonl=t.jsonl when_full=drop_newest")
            })
        }
        "pi_session_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "pi-session=s.jsonl".into(), demo.clone()];
            o(args, vec![("TOOLSTREAM_PI_SESSION_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=pi-session=s.jsonl when_full=drop_newest")
            })
        }
        "pi_sessions_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "pi-sessions=sessions".into(), demo.clone()];
            o(args, vec![("TOOLSTREAM_PI_SESSIONS_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=pi-sessions=sessions when_full=drop_newest")
            })
        }
        "cursor_db_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "cursor-db=chats.db".into(), demo.clone()];
            o(args, vec![("TOOLSTREAM_CURSOR_DB_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=cursor-db=chats.db when_full=drop_newest")
            })
        }
        // No collector listens on port 9 (discard): the sink opens, retries, and reports its losses.
        "otlp_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "otlp=http://127.0.0.1:9".into(), demo.clone()];
            let mut ob = o(args, vec![("TOOLSTREAM_OTLP_WHEN_FULL", "block")], debug(), Look::Stderr, |e| {
                e.contains("sink=otlp=http://127.0.0.1:9 when_full=block")
            });
            ob.code = 1;
            ob
        }
        "otlp_grpc_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "otlp-grpc=http://127.0.0.1:9".into(), demo.clone()];
            let mut ob = o(args, vec![("TOOLSTREAM_OTLP_GRPC_WHEN_FULL", "block")], debug(), Look::Stderr, |e| {
                e.contains("sink=otlp-grpc=http://127.0.0.1:9 when_full=block")
            });
            ob.code = 1;
            ob
        }
        "openai_sse_when_full" => {
            let args = vec!["replay".into(), "--sink".into(), "openai-sse=o.sse".into(), demo.clone()];
            o(args, vec![("TOOLSTREAM_OPENAI_SSE_WHEN_FULL", "drop_newest")], debug(), Look::Stderr, |e| {
                e.contains("sink=openai-sse=o.sse when_full=drop_newest")
            })
        }
        // The prompt reaches a collector only with content capture on; the sink says its mode.
        "otel_capture_content" => {
            let args = vec!["replay".into(), "--sink".into(), "otlp=http://127.0.0.1:9".into(), demo.clone()];
            let var = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY");
            let mut ob = o(args, vec![var], debug(), Look::Stderr, |e| e.contains("capture=\"SPAN_ONLY\""));
            ob.code = 1;
            ob
        }
        "openai_max_runs" => serve_flag("--max-runs", "7", |e| e.contains("max_runs=7 ")),
        "openai_request_timeout_seconds" => {
            serve_flag("--request-timeout", "5", |e| e.contains("request_timeout_s=5 "))
        }
        "openai_tool_result_timeout_seconds" => {
            serve_flag("--tool-result-timeout", "5", |e| e.contains("tool_result_timeout_s=5 "))
        }
        "openai_max_body" => serve_flag("--max-body", "1K", |e| e.contains("body_limit=1024")),
        // No collector listens at the default (localhost:4318) either.
        "otlp_endpoint" => lossy(vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")], debug(), |e| {
            e.contains("endpoint=http://127.0.0.1:9")
        }),
        "otlp_protocol" => lossy(vec![("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")], discard(), |e| {
            e.contains("OTEL_EXPORTER_OTLP_PROTOCOL `http/json` is not supported")
        }),
        "otlp_headers" => lossy(vec![("OTEL_EXPORTER_OTLP_HEADERS", "novalue")], discard(), |e| {
            e.contains("`novalue` is not `key=value`")
        }),
        "otel_service_name" => {
            lossy(vec![("OTEL_SERVICE_NAME", "svc-x")], debug_discard(), |e| e.contains("service=svc-x"))
        }
        "otel_resource_attributes" => {
            let var = ("OTEL_RESOURCE_ATTRIBUTES", "a=b,service.name=from-attrs");
            lossy(vec![var], debug_discard(), |e| e.contains("service=from-attrs"))
        }
        // No PATH, no SHELL: the hook finds no shell of its own, and leaves the command alone.
        "cursor_shell" => {
            let args = ["hook", "cursor"].map(String::from).to_vec();
            let mut ob = o(args, vec![("TOOLSTREAM_CURSOR_SHELL", "/bin/sh")], vec![], Look::Stdout, |out| {
                out.contains(" wrap -- /bin/sh -lc ls")
            });
            ob.stdin = Some(r#"{"hook_event_name":"preToolUse","tool_name":"Shell","tool_input":{"command":"ls"}}"#);
            ob
        }
        "bridge_enabled" => o(bridge("echo"), vec![("PI_CURSOR_PI_TOOL_BRIDGE", "0")], vec![], Look::Stdout, |out| {
            out.contains(r#""reason":"bridge_disabled""#)
        }),
        "bridge_expose_builtins" => {
            o(bridge("read"), vec![("PI_CURSOR_EXPOSE_BUILTIN_TOOLS", "1")], vec![], Look::Stdout, |out| {
                out.contains(r#""type":"listening""#)
            })
        }
        "bridge_ask_question" => {
            o(bridge("cursor_ask_question"), vec![("PI_CURSOR_ASK_QUESTION", "0")], vec![], Look::Stdout, |out| {
                out.contains(r#""reason":"no_tools_exposed""#)
            })
        }
        "bridge_call_timeout_ms" => {
            let var = ("PI_CURSOR_PI_BRIDGE_CALL_TIMEOUT_MS", "500");
            o(bridge("echo"), vec![var], debug(), Look::Stderr, |e| e.contains("call_timeout_ms=500 "))
        }
        // The ceiling lowers the deadline it bounds (in seconds here).
        "bridge_tool_timeout_ms" => {
            let var = ("PI_CURSOR_MCP_TOOL_TIMEOUT_SECONDS", "90");
            o(bridge("echo"), vec![var], debug(), Look::Stderr, |e| e.contains("call_timeout_ms=90000 "))
        }
        "bridge_connect_timeout_ms" => {
            let var = ("PI_CURSOR_MCP_CONNECT_TIMEOUT_SECONDS", "2");
            o(bridge("echo"), vec![var], debug(), Look::Stderr, |e| e.contains("connect_timeout_ms=2000"))
        }
        "bridge_debug" => o(bridge("echo"), vec![("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG", "1")], vec![], Look::Stderr, |e| {
            e.contains(r#"[toolstream:bridge] {"event":"run_created""#)
        }),
        "bridge_debug_file" => {
            let var = ("PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE", "diag.jsonl");
            o(bridge("echo"), vec![var], vec![], Look::File("diag.jsonl"), |t| t.contains(r#""event":"run_created""#))
        }
        // A turn a minute old: open by default, idle past a one-second timeout.
        "hook_turn_idle_ms" => {
            let state = hook_state(dir, name, 60_000, 0);
            let args = vec!["hooks".into(), "status".into(), "--json".into()];
            let mut ob = o(args, vec![("TOOLSTREAM_HOOK_TURN_IDLE_MS", "1000")], vec![], Look::Stdout, |out| {
                out.contains("\"idle\":1")
            });
            ob.common.push(("XDG_STATE_HOME", state));
            ob
        }
        // A spool three days old: kept for 14 days by default, removed past one day.
        "hook_spool_max_age_days" => {
            let state = hook_state(dir, name, 60_000, 3 * 86_400);
            let args = vec!["hooks".into(), "deliver".into()];
            let mut ob = o(args, vec![("TOOLSTREAM_HOOK_SPOOL_MAX_AGE_DAYS", "1")], debug(), Look::Stderr, |e| {
                e.contains("spools pruned files=1")
            });
            ob.common.push(("XDG_STATE_HOME", state));
            ob
        }
        // Spools over 10 bytes: the (undelivered) spool goes.
        "hook_spool_max_bytes" => {
            let state = hook_state(dir, name, 60_000, 0);
            let args = vec!["hooks".into(), "deliver".into()];
            let mut ob = o(args, vec![("TOOLSTREAM_HOOK_SPOOL_MAX_BYTES", "10")], debug(), Look::Stderr, |e| {
                e.contains("spools pruned files=1")
            });
            ob.common.push(("XDG_STATE_HOME", state));
            ob
        }
        _ => return None,
    })
}

/// A state folder (for `XDG_STATE_HOME`) whose Cursor hook spool holds one turn begun `age_ms`
/// ago, the spool file last changed `file_age_s` seconds ago.
fn hook_state(dir: &Path, name: &str, age_ms: u64, file_age_s: u64) -> String {
    let state = dir.join(format!("state-{name}"));
    let spool = state.join("toolstream/cursor-hooks/spool");
    std::fs::create_dir_all(&spool).unwrap();
    let now = std::time::SystemTime::now();
    let now_ms = now.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let record = serde_json::json!({"received_ms": now_ms - age_ms, "payload": {"hook_event_name": "beforeSubmitPrompt",
        "conversation_id": "c1", "generation_id": "g1", "prompt": "hi"}});
    let file = spool.join("c1.jsonl");
    std::fs::write(&file, format!("{record}\n")).unwrap();
    let modified = now - std::time::Duration::from_secs(file_age_s);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(modified).unwrap();
    state.display().to_string()
}

/// Every setting `toolstream config` lists changes what a run does or writes when it is set.
#[test]
fn every_listed_setting_changes_behaviour_or_output() {
    let dir = temp_dir("effects");
    let listed = json(&dir, &[]);
    let names: Vec<String> = listed.as_object().unwrap().keys().cloned().collect();
    assert!(names.len() >= 13, "{names:?}");
    // Several settings at once: the OTLP observers mostly wait (a sink's bounded final export to a
    // closed port), one after another they took a minute.
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                while let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) {
                    check_setting_effect(name, &dir);
                }
            });
        }
    });
}

/// Setting `name` set, against its default: the observer's output differs, as it expects.
fn check_setting_effect(name: &str, dir: &Path) {
    let Some(ob) = observer(name, dir) else { panic!("no observer for listed setting `{name}`: add one") };
    let look = |vars: &[(&str, String)], set_args: &[&str]| {
        let run_dir = temp_dir(&format!("effect-{name}"));
        let all: Vec<(&str, &str)> = ob.common.iter().chain(vars).map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = ob.args.iter().map(String::as_str).chain(set_args.iter().copied()).collect();
        let out = toolstream_fed(&run_dir, &args, &all, ob.stdin);
        assert!(out.code == ob.code, "{name}: exit {} {}", out.code, out.stderr);
        match ob.look {
            Look::Stdout => out.stdout,
            Look::Stderr => out.stderr,
            Look::File(f) => std::fs::read_to_string(run_dir.join("cwd").join(f)).unwrap_or_default(),
        }
    };
    let (default, set) = (look(&[], &[]), look(&ob.vars, &ob.set_args));
    assert_ne!(default, set, "setting `{name}` changed nothing");
    assert!((ob.check)(&set), "setting `{name}`: not the expected change:\n{set}");
    assert!(!(ob.check)(&default) || matches!(ob.look, Look::File(_)), "`{name}`: the default already shows it");
}

/// The docs' settings and sinks tables are what `toolstream config --markdown` generates: each
/// generated block is found, by its marker lines, exactly once in the project's Markdown files
/// (wherever the docs keep it), and equal. Regenerate with `toolstream config --markdown`.
#[test]
fn the_docs_tables_are_the_generated_ones() {
    let dir = temp_dir("markdown");
    let out = config(&dir, &["--markdown"], &[]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let docs = markdown_files(&root);
    let blocks: Vec<&str> = out.stdout.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "settings and sinks: {}", out.stdout);
    for block in blocks {
        let open = block.lines().next().unwrap();
        let close = block.trim_end().lines().last().unwrap();
        assert!(open.starts_with("<!-- toolstream config --markdown: ") && close.starts_with("<!-- end "), "{block}");
        let found: Vec<(&PathBuf, &str)> = docs
            .iter()
            .flat_map(|(path, text)| {
                text.match_indices(open).map(move |(at, _)| {
                    let rest = &text[at..];
                    let end = rest.find(close).map_or(rest.len(), |e| e + close.len());
                    (path, &rest[..end])
                })
            })
            .collect();
        assert_eq!(found.len(), 1, "`{open}` once in the docs: {found:?}");
        assert_eq!(
            found[0].1,
            block.trim_end(),
            "{} differs from `toolstream config --markdown`",
            found[0].0.display()
        );
    }
}

/// The project's Markdown files (not dependencies, builds or git's).
fn markdown_files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                if !name.starts_with('.') && !["target", "node_modules"].contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if name.ends_with(".md") {
                out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

/// Environment variables the code reads that are not toolstream settings: the platform's (home,
/// XDG directories, `PATH`, `SHELL`, `NO_COLOR`: they do not match [`SETTING_VARIABLE`]) and pi's
/// own (where pi keeps its sessions, honoured as pi honours them).
const NOT_SETTINGS: &[&str] = &["PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"];

/// The names a setting's variable may have.
const SETTING_VARIABLE: &[&str] = &["TOOLSTREAM_", "OTEL_", "PI_", "CURSOR_"];

/// Every quoted variable name in the workspace's sources (each crate's `src/`, up to its unit
/// tests, and the pi contract, whose `modelsEnv` the engine reads): what the code can read. The
/// test kit (`TOOLSTREAM_REQUIRE_*` gates) and the fuzz harness are not toolstream.
fn variables_in_sources(root: &Path) -> std::collections::BTreeSet<String> {
    let mut files = vec![root.join("schemas/pi-contract.json")];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir() && !p.starts_with(root.join("fuzz")) && !p.starts_with(root.join("testkit")))
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
                files.push(path);
            }
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for quoted in code.split('"').skip(1).step_by(2) {
            let shaped =
                quoted.len() > 4 && quoted.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if shaped && SETTING_VARIABLE.iter().any(|p| quoted.starts_with(p)) && !quoted.ends_with('_') {
                names.insert(quoted.to_owned());
            }
        }
    }
    names
}

/// `toolstream config --json` lists every setting the code reads: each variable the sources name
/// is a listed setting's (or a known exception above) — the other direction of
/// `every_listed_setting_changes_behaviour_or_output`.
#[test]
fn every_variable_the_code_reads_is_a_listed_setting() {
    let dir = temp_dir("reads");
    let listed = json(&dir, &[]);
    let mut declared = std::collections::BTreeSet::new();
    for entry in listed.as_object().unwrap().values() {
        declared.extend(entry["env"].as_str().unwrap().split(", ").filter(|v| !v.is_empty()).map(str::to_owned));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = variables_in_sources(&root);
    assert!(read.contains("TOOLSTREAM_SHARDS") && read.contains("CURSOR_API_KEY"), "the scan finds reads: {read:?}");
    let unlisted: Vec<&String> =
        read.iter().filter(|v| !declared.contains(*v) && !NOT_SETTINGS.contains(&v.as_str())).collect();
    assert!(unlisted.is_empty(), "read by the code but not a setting of `toolstream config`: {unlisted:?}");
    let gone: Vec<&&str> = NOT_SETTINGS.iter().filter(|v| !read.contains(**v)).collect();
    assert!(gone.is_empty(), "no longer read by the code: {gone:?}");
}
