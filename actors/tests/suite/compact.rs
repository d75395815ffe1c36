//! Acceptance tests of shell-output compaction in process (#14, #24): a generated 5 MB `cargo
//! test` log keeps all 47 failing tests and the right count, and inputs built to break a
//! super-linear design — one 5 MB line, 5 MB of carriage-return redraws, 200,000 lines of one
//! shape, a command line of 20,000 commands, 10,000 alternating tools —
//! come out right (the time is measured in `benches/benches/compact.rs`, never asserted). The
//! tokenjuice pairs run through the CLI (`cli/tests/suite/compact_cli.rs`).

use toolstream_actors::compact::classify::normalize_command;
use toolstream_actors::compact::pipeline::LINE_MAX_CHARS;
use toolstream_actors::compact::{compact, MatchedVia, Request};
use toolstream_testkit::synthetic::cargo_test_log;

#[test]
fn a_5mb_cargo_test_log_keeps_all_47_failing_tests_and_their_count() {
    // Generated here (toolstream_testkit::synthetic), deterministically: the generator
    // script is not among the shared fixtures.
    let (log, names) = cargo_test_log(5 << 20, 47);
    assert!(log.len() >= (5 << 20) - (1 << 18), "{} bytes", log.len());
    let out =
        compact(&Request { command: Some("cargo test"), output: &log, exit_code: Some(101), ..Request::default() });
    assert_eq!(out.trace.matched_reducer, "tests/cargo");
    let passed = log.matches(" ... ok\n").count();
    let header = out.text.lines().next().unwrap();
    assert_eq!(header, format!("exit 101 | 47 failed tests, {passed} passed tests"));
    for name in &names {
        assert!(out.text.contains(&format!("test {name} ... FAILED")), "{name} lost from the run");
        assert!(out.text.contains(&format!("    {name}\n")), "{name} lost from the failures list");
        assert!(out.text.contains(&format!("thread '{name}' panicked at")), "{name}'s panic lost");
    }
    assert!(out.text.contains(&format!("test result: FAILED. {passed} passed; 47 failed;")));
    assert!(!out.text.contains(" ... ok"), "passing tests are dropped");
    assert!(out.trace.ratio < 0.01, "ratio {}", out.trace.ratio);
}

fn run(command: &str, output: &str) -> toolstream_actors::compact::Compacted {
    compact(&Request { command: Some(command), output, exit_code: Some(1), ..Request::default() })
}

#[test]
fn one_5mb_line_is_cut_to_the_longest_line_kept() {
    let line = "x".repeat(5 << 20);
    let out = run("cat blob", &line);
    assert_eq!(out.text.chars().count(), "exit 1\n".len() + LINE_MAX_CHARS);
    assert!(out.text.ends_with('…'));
}

#[test]
fn five_mb_of_redraws_keep_the_last_state() {
    let mut bar = String::with_capacity(5 << 20);
    let mut i = 0u64;
    while bar.len() < 5 << 20 {
        bar.push_str(&format!("\rDownloading {}%", i % 100));
        i += 1;
    }
    bar.push_str("\rDownloaded 100%\n");
    assert_eq!(run("./fetch.sh", &bar).text, "exit 1\nDownloaded 100%");
}

#[test]
fn two_hundred_thousand_lines_of_one_shape_become_one() {
    let mut log = String::from("start\n");
    for i in 0..200_000 {
        log.push_str(&format!("[{i:06}] synced record_{i} from 'db-{}' in {}ms\n", i % 7, i % 13));
    }
    let out = run("./sync", &log);
    assert_eq!(out.trace.matched_via, MatchedVia::Fallback);
    assert_eq!(out.text, "exit 1\nstart\n[199999] synced record_199999 from 'db-2' in 7ms (×200000 similar)");
}

#[test]
fn a_command_line_of_twenty_thousand_commands_is_parsed_in_one_pass() {
    let mut cmd = String::from("cd /r && ");
    for i in 0..20_000 {
        cmd.push_str(&format!("echo {i} && "));
    }
    cmd.push_str("(((cargo test 2>&1))) | tail -n 50");
    let n = normalize_command(&cmd);
    assert!(n.compound);
    assert_eq!(n.producers, [["cargo", "test"]]);
    let heredoc = format!("cat > x <<'EOF'\n{}EOF\npytest -q", "line && (not a command) | x\n".repeat(20_000));
    assert_eq!(normalize_command(&heredoc).producers, [vec!["cat"], vec!["pytest", "-q"]]);
}

#[test]
fn ten_thousand_alternating_tools_are_split_in_one_pass() {
    let mut log = String::new();
    for i in 0..5_000 {
        log.push_str(&format!("running 1 test\ntest t{i} ... FAILED\n"));
        log.push_str("============================= test session starts ==============================\n");
        log.push_str(&format!("FAILED tests/test_{i}.py::test_x - assert 0\n"));
    }
    let out = run("./a.sh; ./b.sh", &log);
    assert_eq!(out.trace.matched_via, MatchedVia::Split);
    assert_eq!(out.trace.parts.len(), 10_000);
    assert!(out.text.contains("test t4999 ... FAILED") && out.text.contains("tests/test_4999.py::test_x"));
}
