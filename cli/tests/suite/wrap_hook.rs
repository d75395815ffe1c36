//! `toolstream wrap` on real commands run on this machine (a failing `cargo test` of a tiny
//! offline crate, `git status`/`git diff` in a temporary repository, pytest when installed), and
//! the Cursor hook: its answers, and install → doctor → uninstall on a temporary HOME.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{run_with_timeout, tempdir, Finished};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_toolstream");

/// `toolstream args…` in `dir` with `env` set (and the host shell pinned to /bin/sh).
fn run_in(dir: &Path, args: &[&str], env: &[(&str, &Path)], stdin: Option<&[u8]>) -> Finished {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir).env("SHELL", "/bin/sh").env_remove("TOOLSTREAM_CURSOR_SHELL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_timeout(&mut cmd, stdin, Duration::from_secs(300)).unwrap()
}

fn wrap(dir: &Path, args: &[&str]) -> Finished {
    let mut all = vec!["wrap"];
    all.extend_from_slice(args);
    run_in(dir, &all, &[], None)
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn a_failing_cargo_test_keeps_every_failure_and_its_exit_code() {
    let dir = tempdir();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut lib = String::from("#[cfg(test)]\nmod tests {\n");
    for i in 0..20 {
        lib.push_str(&format!("    #[test]\n    fn passes_{i}() {{ assert_eq!(1 + 1, 2); }}\n"));
    }
    lib.push_str("    #[test]\n    fn adds_wrong() { assert_eq!(1 + 1, 3, \"arithmetic broke\"); }\n");
    lib.push_str("    #[test]\n    fn panics_on_purpose() { panic!(\"boom at the end\"); }\n}\n");
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    let target = dir.join("target");
    let out = run_in(
        &dir,
        &["wrap", "--trace", "--", "cargo", "test", "--offline", "--quiet"],
        &[("CARGO_TARGET_DIR", &target)],
        None,
    );
    assert_eq!(out.code, Some(101), "cargo test's exit code passes through\n{}{}", out.stdout, out.stderr);
    for kept in [
        "tests::adds_wrong --- FAILED",
        "tests::panics_on_purpose --- FAILED",
        "arithmetic broke",
        "boom at the end",
        "    tests::adds_wrong",
        "    tests::panics_on_purpose",
        "test result: FAILED. 20 passed; 2 failed",
    ] {
        assert!(out.stdout.contains(kept), "{kept:?} lost:\n{}", out.stdout);
    }
    assert!(out.stdout.starts_with("exit 101 | 2 failed tests, 20 passed tests\n"), "{}", out.stdout);
    assert!(!out.stdout.contains("passes_"), "passing tests are dropped:\n{}", out.stdout);
    assert!(!out.stdout.contains("...................."), "progress dots are dropped:\n{}", out.stdout);
    assert!(out.stderr.contains("reducer tests/cargo"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn git_status_and_diff_in_a_temporary_repository() {
    let dir = tempdir();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["config", "user.email", "t@example.com"]);
    git(&dir, &["config", "user.name", "T"]);
    std::fs::write(dir.join("a.txt"), "one\nold line\nthree\n").unwrap();
    git(&dir, &["add", "a.txt"]);
    git(&dir, &["commit", "-qm", "first"]);
    std::fs::write(dir.join("a.txt"), "one\nnew line\nthree\n").unwrap();
    std::fs::write(dir.join("untracked.txt"), "x\n").unwrap();

    let status = wrap(&dir, &["--", "git", "status"]);
    assert_eq!(status.code, Some(0));
    assert!(status.stdout.contains("modified: a.txt"), "{}", status.stdout);
    assert!(status.stdout.contains("untracked.txt"), "{}", status.stdout);
    assert!(!status.stdout.contains("On branch"), "{}", status.stdout);

    let diff = wrap(&dir, &["--", "git", "diff"]);
    assert_eq!(diff.code, Some(0));
    for kept in
        ["1 changed file, 1 hunk, 1 added line, 1 removed line", "diff --git a/a.txt b/a.txt", "-old line", "+new line"]
    {
        assert!(diff.stdout.contains(kept), "{kept:?} lost:\n{}", diff.stdout);
    }
    assert!(!diff.stdout.contains("index "), "{}", diff.stdout);

    let bad = wrap(&dir, &["--", "git", "log", "--no-such-flag"]);
    assert_eq!(bad.code, Some(128), "git's exit code passes through");
    assert!(bad.stdout.contains("--no-such-flag"), "{}", bad.stdout);

    // The same through a host shell, as the Cursor hook runs it: the nested command is classified.
    let traced = wrap(&dir, &["--format", "json", "--trace", "--", "/bin/sh", "-lc", "cd . && git status --short"]);
    let v: Value = serde_json::from_str(&traced.stdout).unwrap();
    assert_eq!(v["trace"]["normalizedCommand"], "git status --short");
    assert_eq!(v["trace"]["normalizedArgv"], serde_json::json!(["git", "status", "--short"]));
    assert_eq!(v["trace"]["matchedReducer"], "git/status");
    assert_eq!(v["trace"]["family"], "git-status");
    assert_eq!(v["exitCode"], 0);
    assert!(v["output"].as_str().unwrap().contains("a.txt"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_pytest_keeps_its_failures() {
    let dir = tempdir();
    // pytest from the project's virtualenv (`scripts/install-py`); under the test command it must
    // be there.
    let Some(python) = common::python(&["pytest"]) else { return };
    let python = python.display().to_string();
    std::fs::write(
        dir.join("test_x.py"),
        "def test_ok():\n    assert True\n\ndef test_bad():\n    assert 1 == 2, 'nope'\n",
    )
    .unwrap();
    let out = wrap(&dir, &["--", &python, "-m", "pytest", "-p", "no:cacheprovider"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.contains("FAILED test_x.py::test_bad"), "{}", out.stdout);
    assert!(out.stdout.starts_with("exit 1 | 1 failed test, 1 passed test"), "{}", out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn raw_is_byte_identical_and_ratio_one() {
    let dir = tempdir();
    let bytes = b"a\r\n\x1b[1mb\x1b[0m\n\n\n\nsame\nsame\n";
    let script = "printf 'a\\r\\n\\033[1mb\\033[0m\\n\\n\\n\\nsame\\nsame\\n'";
    let out = Command::new(BIN).args(["wrap", "--raw", "--", "sh", "-c", script]).output().unwrap();
    assert_eq!(out.stdout, bytes);
    let json = wrap(&dir, &["--raw", "--format", "json", "--trace", "--", "sh", "-c", script]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["trace"]["ratio"], 1.0);
    assert_eq!(v["output"].as_str().unwrap().as_bytes(), bytes);
    // Not raw: the same output is cleaned up.
    let compacted = wrap(&dir, &["--", "sh", "-c", script]);
    assert_eq!(compacted.stdout, "a\nb\n\nsame (×2)\n");
}

#[test]
fn nothing_is_lost_and_exit_codes_pass_through() {
    let dir = tempdir();
    let out = Command::new(BIN)
        .args(["wrap", "--", "sh", "-c", "printf 'ok\\n\\377\\376 binary\\n'; exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(out.stdout, b"ok\n\xff\xfe binary\n", "output that is not UTF-8 is printed as it came");
    let missing = wrap(&dir, &["--", "no-such-command-toolstream"]);
    assert_eq!(missing.code, Some(127));
    assert!(missing.stderr.contains("cannot run `no-such-command-toolstream`"), "{}", missing.stderr);
    let usage = wrap(&dir, &[]);
    assert_eq!(usage.code, Some(2), "no command is a usage error");
}

#[test]
fn hook_answers_are_valid_json_for_every_captured_input() {
    let Some(path) = toolstream_testkit::fixture("tokenjuice/hook-io/cursor-preToolUse-examples.jsonl") else { return };
    let dir = tempdir();
    let mut seen = 0;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let Some(stdin) = case.get("stdin") else { continue };
        let out = run_in(
            &dir,
            &["hook", "cursor", "--wrap-launcher", "/usr/local/bin/toolstream"],
            &[],
            Some(stdin.to_string().as_bytes()),
        );
        assert_eq!(out.code, Some(0));
        let answer: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
        assert_eq!(answer["permission"], "allow", "{}", case["case"]);
        let command = stdin["tool_input"]["command"].as_str().unwrap_or_default();
        if stdin["tool_name"] == "Shell" && !command.contains(" wrap ") {
            let expected = format!("/usr/local/bin/toolstream wrap -- /bin/sh -lc '{command}'");
            assert_eq!(answer["updated_input"]["command"], expected.as_str());
            assert_eq!(answer["updated_input"]["working_directory"], stdin["tool_input"]["working_directory"]);
        } else {
            assert!(answer.get("updated_input").is_none(), "{} passes unchanged", case["case"]);
        }
        seen += 1;
    }
    assert!(seen >= 3, "the captured inputs cover a shell call, a wrapped one and another tool");
    let garbage = run_in(&dir, &["hook", "cursor"], &[], Some(b"not json"));
    assert_eq!(serde_json::from_str::<Value>(&garbage.stdout).unwrap()["permission"], "allow");
}

#[test]
fn the_rewritten_command_runs_and_is_compacted() {
    let dir = tempdir();
    let input = serde_json::json!({"tool_name": "Shell", "tool_input": {"command": "printf 'x\\nx\\nx\\n'; exit 3"}});
    let out = run_in(&dir, &["hook", "cursor", "--wrap-launcher", BIN], &[], Some(input.to_string().as_bytes()));
    let answer: Value = serde_json::from_str(&out.stdout).unwrap();
    let rewritten = answer["updated_input"]["command"].as_str().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", rewritten]).current_dir(&dir);
    let ran = run_with_timeout(&mut cmd, None, Duration::from_secs(60)).unwrap();
    assert_eq!(ran.code, Some(3));
    assert_eq!(ran.stdout, "exit 3\nx (×3)\n");
}

#[test]
fn install_doctor_uninstall_round_trip_keeps_unrelated_hooks_byte_for_byte() {
    let home = tempdir();
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    let hooks = home.join(".cursor/hooks.json");
    let original = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"preToolUse\": [\n      { \"type\": \"command\", \"matcher\": \"Shell\", \"command\": \"./audit.sh\" }\n    ],\n    \"afterFileEdit\": [ {\"command\":\"./format.sh\"} ]\n  }\n}\n";
    std::fs::write(&hooks, original).unwrap();
    let env = [("HOME", home.as_path())];

    let doctor = run_in(&home, &["doctor", "cursor"], &env, None);
    assert_eq!(doctor.code, Some(1));
    assert!(doctor.stdout.contains("health: broken") && doctor.stdout.contains("no toolstream preToolUse hook"));

    let install = run_in(&home, &["install", "cursor", "--launcher", BIN], &env, None);
    assert_eq!(install.code, Some(0), "{}", install.stderr);
    let installed = std::fs::read_to_string(&hooks).unwrap();
    let v: Value = serde_json::from_str(&installed).unwrap();
    let pre = v["hooks"]["preToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    assert_eq!(pre[1]["command"], format!("{BIN} hook cursor"));
    assert!(installed.contains("{ \"type\": \"command\", \"matcher\": \"Shell\", \"command\": \"./audit.sh\" }"));
    assert!(installed.contains("\"afterFileEdit\": [ {\"command\":\"./format.sh\"} ]"));

    let doctor = run_in(&home, &["doctor", "cursor"], &env, None);
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("health: ok"), "{}", doctor.stdout);

    // Installing again replaces the entry instead of adding a second one.
    assert_eq!(run_in(&home, &["install", "cursor", "--launcher", BIN], &env, None).code, Some(0));
    assert_eq!(std::fs::read_to_string(&hooks).unwrap(), installed);

    let uninstall = run_in(&home, &["uninstall", "cursor"], &env, None);
    assert_eq!(uninstall.code, Some(0));
    assert_eq!(std::fs::read_to_string(&hooks).unwrap(), original, "byte for byte");

    // A missing file is created; a broken one is left alone.
    std::fs::remove_file(&hooks).unwrap();
    assert_eq!(run_in(&home, &["install", "cursor", "--launcher", BIN], &env, None).code, Some(0));
    assert!(run_in(&home, &["doctor", "cursor"], &env, None).stdout.contains("health: ok"));
    std::fs::write(&hooks, "{ broken").unwrap();
    let refused = run_in(&home, &["install", "cursor"], &env, None);
    assert_eq!(refused.code, Some(2));
    assert!(refused.stderr.contains("cannot be edited safely"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&hooks).unwrap(), "{ broken");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn every_new_command_explains_itself() {
    let dir = tempdir();
    for args in [
        &["wrap", "--help"][..],
        &["compact", "--help"],
        &["hook", "cursor", "--help"],
        &["install", "--help"],
        &["doctor", "--help"],
        &["uninstall", "--help"],
    ] {
        let out = run_in(&dir, args, &[], None);
        assert_eq!(out.code, Some(0), "{args:?}");
        assert!(out.stdout.len() > 200, "{args:?}: {}", out.stdout);
    }
    let bad = run_in(&dir, &["install", "vscode"], &[], None);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("cursor"), "{}", bad.stderr);
}

/// The demo recording with its shell call turned into a failing `cargo test` with a long log.
fn demo_with_a_cargo_test(dir: &Path) -> std::path::PathBuf {
    let (log, _) = toolstream_testkit::synthetic::cargo_test_log(16 << 10, 2);
    let demo = std::fs::read_to_string(common::example("demo.jsonl")).unwrap();
    let mut out = String::new();
    for line in demo.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if let Some(shell) = v.pointer_mut("/tool_call/shellToolCall") {
            shell["args"]["command"] = "cargo test".into();
            if let Some(failure) = shell.pointer_mut("/result/failure") {
                failure["command"] = "cargo test".into();
                failure["stdout"] = log.clone().into();
                failure["stderr"] = "".into();
                failure["exitCode"] = 101.into();
            }
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    let path = dir.join("cargo-test-run.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn replay_compact_changes_only_the_model_facing_output() {
    let dir = tempdir();
    let run = demo_with_a_cargo_test(&dir);
    let run = run.to_str().unwrap();
    let session = |name: &str, compact: bool| {
        let path = dir.join(name);
        let spec = format!("--sink=pi-session={}", path.display());
        let mut args = vec!["replay", spec.as_str(), run];
        if compact {
            args.push("--compact");
        }
        let out = run_in(&dir, &args, &[], None);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        std::fs::read_to_string(path).unwrap()
    };
    let plain = session("plain.jsonl", false);
    let compacted = session("compact.jsonl", true);
    assert!(plain.contains(" ... ok"), "the plain session has the full log");
    assert!(!compacted.contains(" ... ok"), "passing tests are gone from the compacted session");
    assert!(compacted.contains("2 failed tests"), "the compacted session counts the failures");
    assert!(compacted.len() < plain.len() / 2, "{} vs {}", compacted.len(), plain.len());

    let cards = |extra: &[&str]| {
        let mut args = vec!["replay", "--expanded", "--color=never", run];
        args.extend_from_slice(extra);
        run_in(&dir, &args, &[], None).stdout
    };
    assert_eq!(cards(&["--compact"]), cards(&[]), "--compact leaves the cards alone");
    let compact_cards = cards(&["--compact-cards"]);
    assert!(compact_cards.contains("2 failed tests"), "{compact_cards}");
    let _ = std::fs::remove_dir_all(&dir);
}
