//! Golden tests: `toolstream replay --color never` on real captures and on the project's demo,
//! compared with reviewed snapshots (insta), plus explicit checks of what each snapshot must show.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

fn replay(path: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["replay", "--color", "never"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    let run = common::toolstream(&args, None);
    assert!(run.code == 0, "{}: exit {} {}", path.display(), run.code, run.stderr);
    run.stdout
}

macro_rules! golden {
    ($test:ident, $file:literal, |$out:ident| $checks:block) => {
        #[test]
        fn $test() {
            let Some(path) = common::cli_capture(concat!($file, ".jsonl")) else { return };
            let $out = replay(&path, &[]);
            common::assert_golden("golden", stringify!($test), &$out);
            $checks
        }
    };
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

golden!(pretool_refusal, "harness-mocks__pretool-refusal", |out| {
    // Five hook-refused shells are error cards with their reason; the sixth succeeds.
    assert_eq!(count(&out, "✗ $ echo "), 5);
    for reason in ["USER-DENY-MSG", "PRE-BLOCK-MSG", "SHELL-BLOCK-MSG", "SHELL-USER-DENY-MSG"] {
        assert!(out.contains(reason), "{reason}");
    }
    assert!(out.contains("● $ echo FINE\n    FINE\n"));
    assert!(out.contains("6 cards, 5 errors"));
});

golden!(tool_failure, "harness-mocks__tool-failure", |out| {
    assert!(out.contains("✗ $ false\n    Command exited with code 1\n"));
    assert!(out.contains("✗ $ sh -c 'echo OOPS >&2; exit 3'\n    OOPS\n\n    Command exited with code 3\n"));
    // An explicit error result reads `Error: <error>` (SPEC §4).
    assert!(out.contains("✗ read <RUN>/missing-file.txt\n    Error: File not found\n"));
    assert!(out.contains("● edit <RUN>/note.txt added 1 line, removed 0 lines\n    +1 hi\n"));
    assert_eq!(count(&out, "\nDONE\n"), 1, "the final text once");
});

golden!(partial_output_head50, "skill-eval-lab__run-0016__head50", |out| {
    // Each piece of text once (deltas, then a consolidated repeat that is dropped).
    assert_eq!(count(&out, "I'll find the roof quick calculator"), 1);
    // The three parallel calls, never completed in this truncated capture (SPEC §5.3: the input
    // ended without its `result`, so the stream ended; no SDK failed).
    assert_eq!(count(&out, "did not complete: stream ended without a result"), 3);
    assert!(out.contains("✗ error: missing result"));
});

golden!(mcp_and_unknown_tool, "harness-mocks__mcp", |out| {
    // An unknown tool is summarised by up to three of its scalar args (SPEC §4).
    assert!(out.contains("● Cursor getMcpTools server=local, toolName=echo\n"));
    assert!(out.contains("● Cursor MCP echo\n    ECHOED: HELLO\n"));
    // Raw call ids never reach users.
    assert!(!out.contains("call-b2556144"));
});

golden!(file_tools, "harness-mocks__file-tools", |out| {
    assert!(out.contains("● edit <RUN>/note.txt added 1 line, removed 1 line\n    -1 hi\n    +1 bye\n"));
    assert!(out.contains("● read <RUN>/note.txt\n    hi\n"));
});

golden!(grep_delete, "harness-mocks__grep-delete", |out| {
    assert!(out.contains("● Cursor grep NEEDLE\n"));
    assert!(out.contains("● Cursor delete <RUN>/gone.txt\n"));
});

golden!(task_and_background_shell, "harness-mocks__task-stream-frames", |out| {
    // A subagent's summary is `<description>: <first output line>` (SPEC §4).
    assert!(out.contains("● Cursor subagent Reply with PONG: PONG\n    PONG\n"));
    assert!(out.contains("● Cursor await blockUntilMs=10000, taskId=339917\n"));
});

golden!(completions_without_start, "agentsserver__captured-lines__NOT-contiguous", |out| {
    // Completed lines with no started line (and one without args) still render.
    assert!(out.contains("✗ $ python3 hello.py\n    Rejected: "));
    assert!(out.contains("● $ python3 /private/tmp/cursor-research/hello.py\n    hello world\n"));
});

#[test]
fn demo_collapsed_and_expanded() {
    let demo = common::example("demo.jsonl");
    let out = replay(&demo, &[]);
    common::assert_golden("golden", "demo", &out);
    let expanded = replay(&demo, &["--expanded"]);
    common::assert_golden("golden", "demo_expanded", &expanded);
    assert!(out.contains("✗ $ npm test -- --silent"));
    assert!(expanded.contains("Command exited with code 1"));
    assert!(out.contains("-12   return Math.round(cents * rate) / 100;"));
}

/// The count in a collapsed card's "… (N more lines; --expanded shows them)" or "... (N more diff
/// lines hidden)" line.
fn hidden_count(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let rest = t.strip_prefix("… (").or_else(|| t.strip_prefix("... ("))?;
    let (n, tail) = rest.split_once(' ')?;
    (tail == "more lines; --expanded shows them)" || tail == "more diff lines hidden)").then(|| n.parse().ok())?
}

#[test]
fn expanded_shows_what_the_collapsed_view_hides_on_both_examples() {
    for name in ["demo.jsonl", "sdk-demo.jsonl"] {
        let path = common::example(name);
        let collapsed = replay(&path, &[]);
        let expanded = replay(&path, &["--expanded"]);
        assert_ne!(collapsed, expanded, "{name}: --expanded shows nothing more");
        let markers: Vec<&str> = collapsed.lines().filter(|l| hidden_count(l).is_some()).collect();
        assert!(markers.iter().any(|l| l.contains("--expanded shows them")), "{name}: no long body\n{collapsed}");
        assert!(markers.iter().any(|l| l.contains("more diff lines hidden")), "{name}: no long diff\n{collapsed}");
        // The expanded view is the collapsed one with each marker replaced by exactly the lines
        // it counts.
        let mut full = expanded.lines();
        for line in collapsed.lines() {
            match hidden_count(line) {
                Some(n) => {
                    let shown: Vec<&str> = full.by_ref().take(n).collect();
                    assert_eq!(shown.len(), n, "{name}: {line}");
                    assert!(shown.iter().all(|l| hidden_count(l).is_none()), "{name}: {shown:?}");
                }
                None => assert_eq!(full.next(), Some(line), "{name}: expanded differs outside the hidden lines"),
            }
        }
        assert_eq!(full.next(), None, "{name}: expanded has more than the collapsed view hides");
    }
}

#[test]
fn color_always_colours_and_never_does_not() {
    let demo = common::example("demo.jsonl");
    let plain = replay(&demo, &[]);
    assert!(!plain.contains('\x1b'));
    let run = common::toolstream(&["replay", "--color", "always", demo.to_str().unwrap()], None);
    assert!(run.stdout.contains("\x1b[31m"), "error colour");
    assert!(run.stdout.contains("\x1b[32m+13"), "added diff line colour");
    // Stripping the escapes gives the plain output back.
    let stripped = strip_ansi(&run.stdout);
    assert_eq!(stripped, plain);
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn replays_are_byte_identical() {
    for path in common::cli_captures() {
        assert_eq!(replay(&path, &[]), replay(&path, &[]), "{}", path.display());
    }
}
