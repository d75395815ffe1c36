//! Unit tests of the compaction entry points: every inline rule case, `--raw`, classification
//! in the trace, and the never-lose-output guarantees.

use super::rules::RuleSet;
use super::*;

#[test]
fn every_inline_case_of_every_rule_file_passes() {
    let set = RuleSet::builtin().unwrap();
    let mut failures = Vec::new();
    for case in &set.cases {
        let out = compact(&Request {
            command: Some(&case.command),
            output: &case.input,
            exit_code: Some(case.exit),
            ..Request::default()
        });
        if out.trace.matched_reducer != case.rule {
            failures.push(format!(
                "{} / {}: matched {}, not {}",
                case.file, case.name, out.trace.matched_reducer, case.rule
            ));
        } else if out.text != case.expected {
            failures.push(format!(
                "{} / {}:\n--- expected\n{}\n--- got\n{}",
                case.file, case.name, case.expected, out.text
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_rule_has_an_inline_case() {
    let set = RuleSet::builtin().unwrap();
    for rule in &set.rules {
        assert!(set.cases.iter().any(|c| c.rule == rule.id), "rule {} has no [[tests]] case", rule.id);
    }
}

#[test]
fn raw_is_byte_identical_with_ratio_one() {
    let output = "\x1b[31mred\x1b[0m\r\n\n\nsame\nsame\n";
    let out = raw(&Request { command: Some("cargo test"), output, exit_code: Some(101), ..Request::default() });
    assert_eq!(out.text, output);
    assert_eq!(out.trace.ratio, 1.0);
    assert_eq!(out.trace.matched_reducer, RAW_REDUCER);
    assert_eq!(out.trace.normalized_argv, ["cargo", "test"]);
}

#[test]
fn the_trace_shows_the_nested_command() {
    let argv: Vec<String> = ["/bin/bash", "-lc", "cd /r && git status --short"].map(String::from).to_vec();
    let out = compact(&Request { argv: Some(&argv), output: " M a.rs\n", exit_code: Some(0), ..Request::default() });
    assert_eq!(out.trace.normalized_command, "git status --short");
    assert_eq!(out.trace.normalized_argv, ["git", "status", "--short"]);
    assert_eq!(out.trace.matched_reducer, "git/status");
    assert_eq!(out.trace.family, "git-status");
    assert!(out.trace.ratio <= 1.0);
}

#[test]
fn a_compound_command_keeps_a_later_commands_output() {
    let mut output = String::new();
    for i in 0..500 {
        output.push_str(&format!("npm noise line {i}\n"));
    }
    output.push_str("test b ... FAILED\nlast line of the second command\n");
    let out = compact(&Request {
        command: Some("npm ci && cargo test"),
        output: &output,
        exit_code: Some(101),
        ..Request::default()
    });
    assert_eq!(out.trace.matched_reducer, rules::COMPOUND_ID);
    assert!(out.trace.compound);
    assert!(out.text.contains("npm noise line 250"), "the compound reducer cuts nothing");
    assert!(out.text.ends_with("last line of the second command"));
}

#[test]
fn failure_lines_survive_the_head_tail_bound() {
    let mut output = String::new();
    for i in 0..1000 {
        output.push_str(&format!("line {i}\n"));
        if i == 500 {
            output.push_str("src/x.c:5:1: fatal error: missing.h: No such file\n");
        }
    }
    let out =
        compact(&Request { command: Some("custom-build"), output: &output, exit_code: Some(1), ..Request::default() });
    assert!(out.text.contains("src/x.c:5:1: fatal error: missing.h"));
    assert!(out.text.contains("line 0") && out.text.contains("line 999"));
    assert!(!out.text.contains("line 400\n"));
    assert!(out.text.contains("lines omitted"));
    assert!(out.trace.ratio < 0.2, "{}", out.trace.ratio);
}

#[test]
fn no_command_and_empty_output_are_fine() {
    let out = compact(&Request::default());
    assert_eq!(out.text, "");
    assert_eq!(out.trace.ratio, 1.0);
    assert_eq!(out.trace.matched_reducer, rules::FALLBACK_ID);
}
