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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.arg("config").args(args).current_dir(dir.join("cwd")).env_clear();
    cmd.env("HOME", dir.join("home")).env("XDG_CONFIG_HOME", dir.join("xdg"));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Out {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
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
    assert_eq!(j["bridge_enabled"]["value"], true);
    assert_eq!(j["bridge_call_timeout_ms"]["value"], 3_600_000);
    assert_eq!(j["mcp_connect_timeout_ms"]["value"], 10_000);
    assert_eq!(j["native_tool_display"]["value"], true);
    assert_eq!(j["otlp_endpoint"]["value"], Value::Null);
}

#[test]
fn env_overrides_the_local_file_which_overrides_defaults() {
    let dir = temp_dir("layers");
    std::fs::write(dir.join("cwd/toolstream.toml"), "lifecycle_defer_ms = 50\nbatch_settle_ms = 10\n").unwrap();
    let j = json(&dir, &[("TOOLSTREAM_LIFECYCLE_DEFER_MS", "20"), ("PI_CURSOR_PI_TOOL_BRIDGE", "0")]);
    assert_eq!(j["config_file"]["value"], "./toolstream.toml");
    assert_eq!(j["lifecycle_defer_ms"]["value"], 20);
    assert_eq!(j["lifecycle_defer_ms"]["origin"], "env TOOLSTREAM_LIFECYCLE_DEFER_MS");
    assert_eq!(j["batch_settle_ms"]["value"], 10);
    assert_eq!(j["batch_settle_ms"]["origin"], "file ./toolstream.toml (batch_settle_ms)");
    assert_eq!(j["usage_wait_ms"]["origin"], "default");
    assert_eq!(j["bridge_enabled"]["value"], false);
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
