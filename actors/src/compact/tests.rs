//! Unit tests of the compaction entry points: every inline rule case, `--raw`, classification
//! in the trace (by command, by content, split), and the never-lose-output guarantees.

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
fn every_rule_recognised_by_content_has_a_case_whose_command_says_nothing() {
    let set = RuleSet::builtin().unwrap();
    let by_content: Vec<usize> = set.start_rules.iter().chain(&set.signature_rules).copied().collect();
    for (i, rule) in set.rules.iter().enumerate().filter(|(i, _)| by_content.contains(i)) {
        let covered = set.cases.iter().any(|c| {
            c.rule == rule.id
                && classify::normalize_command(&c.command).producers.iter().all(|p| classify::pick(set, p).is_none())
        });
        assert!(covered, "rule {} (#{i}) has content patterns but no case that reaches it by content", rule.id);
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

/// A plain word for `i` (`ba`, `bb`, …): lines made of these have different shapes.
fn word(mut i: usize) -> String {
    let mut w = String::from("b");
    loop {
        w.push(char::from(b'a' + (i % 26) as u8));
        i /= 26;
        if i == 0 {
            return w;
        }
    }
}

#[test]
fn output_of_several_commands_that_cannot_be_split_is_not_cut() {
    let mut output = String::new();
    for i in 0..500 {
        output.push_str(&format!("npm says {}\n", word(i)));
    }
    output.push_str("test b ... FAILED\nlast line of the second command\n");
    let out = compact(&Request {
        command: Some("npm ci && cargo test"),
        output: &output,
        exit_code: Some(101),
        ..Request::default()
    });
    assert_eq!(out.trace.matched_reducer, rules::COMPOUND_ID);
    assert_eq!(out.trace.matched_via, MatchedVia::Fallback);
    assert!(out.trace.compound);
    assert_eq!(out.trace.producers, ["npm ci", "cargo test"]);
    assert!(out.text.contains(&format!("npm says {}\n", word(250))), "the compound reducer cuts nothing");
    assert!(out.text.ends_with("test b ... FAILED\nlast line of the second command"));
}

#[test]
fn the_generic_reducer_collapses_same_shape_runs_and_keeps_problems_head_and_tail() {
    let mut output = String::from("batch report\n");
    for i in 0..1000 {
        output.push_str(&format!("[00:{:02}] processed item {i} in {}ms\n", i % 60, i % 7));
        if i == 500 {
            output.push_str("src/x.c:5:1: fatal error: missing.h: No such file\n");
            output.push_str("retrying item_500 (see worker.log:12)\n");
            output.push_str("deprecated option --fast, WARNING\n");
        }
    }
    output.push_str("done\n");
    let out =
        compact(&Request { command: Some("custom-batch"), output: &output, exit_code: Some(1), ..Request::default() });
    assert_eq!(out.trace.matched_reducer, rules::FALLBACK_ID);
    assert_eq!(out.trace.matched_via, MatchedVia::Fallback);
    assert_eq!(
        out.text,
        "exit 1\nbatch report\n[00:20] processed item 500 in 3ms (×501 similar)\n\
         src/x.c:5:1: fatal error: missing.h: No such file\nretrying item_500 (see worker.log:12)\n\
         deprecated option --fast, WARNING\n[00:39] processed item 999 in 5ms (×499 similar)\ndone"
    );
}

#[test]
fn failure_lines_survive_the_head_tail_bound() {
    // Lines of different shapes (nothing to collapse): the head/tail bound cuts the middle.
    let mut output = String::new();
    for i in 0..1000 {
        output.push_str(&format!("{}\n", word(i)));
        if i == 500 {
            output.push_str("src/x.c:5:1: fatal error: missing.h: No such file\n");
        }
    }
    let out =
        compact(&Request { command: Some("custom-build"), output: &output, exit_code: Some(1), ..Request::default() });
    assert!(out.text.contains("src/x.c:5:1: fatal error: missing.h"));
    assert!(out.text.contains(&format!("\n{}\n", word(0))) && out.text.ends_with(&word(999)));
    assert!(!out.text.contains(&format!("\n{}\n", word(400))));
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

fn run(command: &str, output: &str, exit: i32) -> Compacted {
    compact(&Request { command: Some(command), output, exit_code: Some(exit), ..Request::default() })
}

const CARGO: &str = "   Compiling demo v0.1.0 (/tmp/demo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.50s
     Running unittests src/lib.rs (target/debug/deps/demo-1234)

running 3 tests
test a ... ok
test b ... FAILED
test c ... ok

failures:
    b

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

const PYTEST: &str = "============================= test session starts ==============================
collected 3 items

tests/test_a.py ..F                                                      [100%]
FAILED tests/test_a.py::test_c - assert 1 == 2
========================= 1 failed, 2 passed in 0.05s =========================
";

#[test]
fn a_pipeline_is_reduced_by_its_producer() {
    let tail: String = CARGO.lines().skip(5).map(|l| format!("{l}\n")).collect();
    for cmd in ["cargo test 2>&1 | tail -n 9", "cd crate && cargo test | tee log.txt", "(cargo test) 2>&1 | head -100"]
    {
        let out = run(cmd, &tail, 101);
        assert_eq!(out.trace.matched_reducer, "tests/cargo", "{cmd}");
        assert_eq!(out.trace.matched_via, MatchedVia::Command, "{cmd}");
        assert!(
            out.text.starts_with("exit 101 | 1 failed test, 2 passed tests\ntest b ... FAILED"),
            "{cmd}:\n{}",
            out.text
        );
    }
}

#[test]
fn output_whose_command_says_nothing_is_recognised_by_content() {
    for cmd in ["cat cargo.log", "./run-tests.sh", "make test", "just ci", "npm run test", "custom-runner"] {
        let out = run(cmd, CARGO, 101);
        assert_eq!(out.trace.matched_reducer, "tests/cargo", "{cmd}");
        assert_eq!(out.trace.matched_via, MatchedVia::Content, "{cmd}");
        assert_eq!(
            out.trace.evidence.as_deref(),
            Some("Running unittests src/lib.rs (target/debug/deps/demo-1234)"),
            "{cmd}: the first start line of the rule says"
        );
    }
    // Without a start line (cut by `tail`), the last lines still say.
    let out = run("tail -n 3 pytest.log", &PYTEST.lines().skip(3).map(|l| format!("{l}\n")).collect::<String>(), 0);
    assert_eq!(out.trace.matched_reducer, "tests/pytest");
    assert_eq!(out.trace.matched_via, MatchedVia::Content);
    assert!(out.trace.evidence.as_deref().is_some_and(|e| e.starts_with("FAILED tests/test_a.py::test_c")));
    // Nothing recognisable: the generic reducer — or, for a file read, the file as it is.
    let notes = "step 1 done\nstep 2 done\nstep 3 done\nstep 4 done\n";
    let out = run("./notes-tool", notes, 0);
    assert_eq!((out.trace.matched_reducer.as_str(), out.trace.matched_via), (rules::FALLBACK_ID, MatchedVia::Fallback));
    assert_eq!(out.text, "step 1 done\nstep 4 done (×3 similar)");
    for reads in
        ["cat notes.txt", "sed -n 1,4p notes.txt", "cd docs && head -n 4 notes.txt | cat", "cat a.txt; cat b.txt"]
    {
        let out = run(reads, notes, 0);
        assert_eq!((out.trace.matched_reducer.as_str(), out.trace.matched_via), (rules::FILE_ID, MatchedVia::Fallback));
        assert_eq!(out.text, notes.trim_end(), "{reads}");
    }
}

#[test]
fn the_output_of_several_producers_is_split_where_each_begins() {
    let output = format!("{CARGO}{PYTEST}");
    let out = run("bash -c 'cat cargo.log; ./run-tests.sh'", &output, 1);
    assert_eq!(out.trace.matched_via, MatchedVia::Split);
    assert_eq!(out.trace.matched_reducer, "tests/cargo + tests/pytest");
    assert_eq!(out.trace.producers, ["cat cargo.log", "./run-tests.sh"]);
    let parts: Vec<(usize, &str, MatchedVia)> =
        out.trace.parts.iter().map(|p| (p.first_line, p.matched_reducer.as_str(), p.matched_via)).collect();
    assert_eq!(parts, [(1, "tests/cargo", MatchedVia::Content), (14, "tests/pytest", MatchedVia::Content)]);
    assert_eq!(
        out.text,
        "exit 1\n1 failed test, 2 passed tests\ntest b ... FAILED\n\nfailures:\n    b\n\n\
         test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n\
         1 failed test, 2 passed tests\nFAILED tests/test_a.py::test_c - assert 1 == 2\n== 1 failed, 2 passed in 0.05s =="
    );
    // A part whose tool the command names takes that rule; lines before the first recognised
    // start belong to the first producer when it names one.
    let npm = "added 12 packages in 2s\n\n3 packages are looking for funding\n  run `npm fund` for details\n";
    let out = run("npm ci && cargo test", &format!("{npm}{CARGO}"), 101);
    let parts: Vec<(usize, &str, MatchedVia)> =
        out.trace.parts.iter().map(|p| (p.first_line, p.matched_reducer.as_str(), p.matched_via)).collect();
    assert_eq!(parts, [(1, "install/npm", MatchedVia::Command), (5, "tests/cargo", MatchedVia::Command)]);
    assert!(
        out.text.starts_with("exit 101\nadded 12 packages in 2s\n\n1 failed test, 2 passed tests\n"),
        "{}",
        out.text
    );
}

#[test]
fn two_runs_of_one_tool_add_up() {
    let out = run("cargo test; cargo test --release", &format!("{CARGO}{CARGO}"), 101);
    assert_eq!(out.trace.matched_via, MatchedVia::Command);
    assert!(out.text.starts_with("exit 101 | 2 failed tests, 4 passed tests\n"), "{}", out.text);
    let out = run("./a.sh && ./b.sh", &format!("{CARGO}{CARGO}"), 101);
    assert_eq!((out.trace.matched_reducer.as_str(), out.trace.matched_via), ("tests/cargo", MatchedVia::Content));
    assert!(out.text.starts_with("exit 101 | 2 failed tests, 4 passed tests\n"), "{}", out.text);
}
