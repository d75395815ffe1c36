//! Cursor hooks and agent transcripts as sources (SPEC §1.5, §1.6), on the real captures of
//! `../shared/fixtures/cursor-hooks/` and `../shared/fixtures/cursor-transcripts/`: every file
//! replays with no decode error and with the runs and calls it holds (counted here straight from
//! the JSON, not by the decoder); the LangSmith pair — one session's hook log and transcripts —
//! gives the same calls from either source; a subagent's run is nested under its Subagent call
//! (cards, pi session).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::cursor::hook_log_holds;
use serde_json::Value;
use toolstream_engine::decode::framing::{Frame, LineReader};
use toolstream_engine::decode::Decoder;
use toolstream_schemas::{CallArgs, Input, Output, ToolKind};

/// The LangSmith pair: the hook log and the transcripts of the same session.
const PAIR_HOOKS: &str = "cursor-hooks/cursor-hooks.jsonl";
const PAIR_TRANSCRIPTS: &str = "cursor-transcripts/6bd3db3e-e838-485e-befc-b5f0d05b18cd";
const PAIR_MAIN: &str = "6bd3db3e-e838-485e-befc-b5f0d05b18cd";
const PAIR_SUBAGENT: &str = "3e6a5f09-8e10-4614-8714-152f3cc1b719";

/// Every hook log of the fixtures.
fn hook_logs() -> Vec<PathBuf> {
    let mut files = toolstream_testkit::fixture_files("cursor-hooks", "jsonl");
    files.extend(toolstream_testkit::fixture_files("cursor-hooks", "ndjson"));
    files
}

/// Every transcript of the fixtures (subagents' included).
fn transcripts() -> Vec<PathBuf> {
    let Some(dir) = toolstream_testkit::fixture("cursor-transcripts") else { return Vec::new() };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What a transcript holds: turns (user messages) and calls (`tool_use` blocks).
fn transcript_holds(file: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut turns = 0;
    let mut calls = 0;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).unwrap();
        turns += usize::from(v["role"] == "user");
        calls += v["message"]["content"].as_array().map_or(0, |c| c.iter().filter(|b| b["type"] == "tool_use").count());
    }
    (turns, calls)
}

#[test]
fn every_hook_log_and_transcript_replays_with_no_decode_error_and_what_it_holds() {
    let mut seen = 0;
    for (file, (runs, calls)) in hook_logs()
        .into_iter()
        .map(|f| {
            let h = hook_log_holds(&f);
            (f, h)
        })
        .chain(transcripts().into_iter().map(|f| {
            let h = transcript_holds(&f);
            (f, h)
        }))
    {
        let name = file.display();
        let run = common::toolstream(&["stats", "--json", file.to_str().unwrap()], None);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let stats: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        assert_eq!(stats["decode_errors"], 0, "{name}: {}", stats["decode_error_samples"]);
        assert_eq!(stats["runs"], runs, "{name}: runs");
        assert_eq!(stats["calls"], calls, "{name}: calls");
        let format = stats["files"][0]["format"].as_str().unwrap();
        assert!(format == "cursor-hooks" || format == "cursor-transcript", "{name}: {format}");
        // Transcripts record no results: nothing fails.
        if format == "cursor-transcript" {
            assert_eq!(
                (stats["error_cards"].as_u64(), stats["incomplete_calls"].as_u64()),
                (Some(0), Some(0)),
                "{name}"
            );
        }
        seen += 1;
    }
    assert!(seen == 0 || seen >= 5, "both hook logs and three transcripts: {seen}");
}

/// The tool calls of a source, decoded by the library: per conversation, (canonical tool, what
/// it acted on).
fn calls_of(files: &[PathBuf]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for f in files {
        let mut decoder = Decoder::new(f.display().to_string(), None);
        let mut lines = LineReader::new(std::fs::File::open(f).unwrap());
        let mut events = Vec::new();
        while let Some(frame) = lines.next_frame().unwrap() {
            if let Frame::Line { .. } = frame {
                decoder.decode_frame(frame, &mut events).unwrap();
            }
        }
        decoder.finish(&mut events);
        for ev in events {
            let Input::ToolStarted(t) = ev.kind else { continue };
            let args = t.args.as_deref().and_then(CallArgs::tree);
            let a = |k: &str| args.and_then(|v| v.get(k)).and_then(Value::as_str).unwrap_or("").to_owned();
            let target = match t.tool.kind() {
                Some(ToolKind::Read | ToolKind::Write | ToolKind::Edit) => a("path"),
                Some(ToolKind::Grep) => format!("{} in {}", a("pattern"), a("path")),
                // The hooks report a glob as Cursor ran it: rooted with `**/` (`.github/**/*` in the
                // transcript is `**/.github/**/*` in the hook log).
                Some(ToolKind::Glob) => {
                    let g = a("globPattern");
                    format!("{} in {}", g.strip_prefix("**/").unwrap_or(&g), a("targetDirectory"))
                }
                Some(ToolKind::Task) => a("description"),
                _ => String::new(),
            };
            out.entry(ev.session.to_string()).or_default().push((t.tool.name().to_owned(), target));
        }
    }
    for calls in out.values_mut() {
        calls.sort();
    }
    out
}

fn minus(a: &[(String, String)], b: &[(String, String)]) -> Vec<(String, String)> {
    let mut left: HashMap<&(String, String), usize> = HashMap::new();
    for x in b {
        *left.entry(x).or_default() += 1;
    }
    let mut out = Vec::new();
    for x in a {
        match left.get_mut(x) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(x.clone()),
        }
    }
    out
}

#[test]
fn the_langsmith_pair_gives_the_same_calls_from_either_source() {
    let (Some(log), Some(dir)) =
        (toolstream_testkit::fixture(PAIR_HOOKS), toolstream_testkit::fixture(PAIR_TRANSCRIPTS))
    else {
        return;
    };
    let from_hooks = calls_of(&[log]);
    let from_transcripts = calls_of(&[
        dir.join(format!("{PAIR_MAIN}.jsonl")),
        dir.join("subagents").join(format!("{PAIR_SUBAGENT}.jsonl")),
    ]);
    assert_eq!(
        from_hooks.keys().collect::<Vec<_>>(),
        from_transcripts.keys().collect::<Vec<_>>(),
        "the same conversations"
    );
    let pair = |v: &[(&str, &str)]| v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect::<Vec<_>>();
    // What only one source can see: the hooks report Cursor saving the pasted image; the
    // transcript records the subagent's progress notes, a tool no hook reports.
    let main_hooks_only = pair(&[(
        "write",
        "/Users/user/.cursor/projects/Users-user-Desktop-langsmith-cli/assets/IMG_5041-559f8c92-9387-4252-a9a4-c5a660aa2611.png",
    )]);
    let sub_transcript_only = vec![("UpdateCurrentStep".to_owned(), String::new()); 4];
    let (h, t) = (&from_hooks[PAIR_MAIN], &from_transcripts[PAIR_MAIN]);
    assert_eq!(minus(h, t), main_hooks_only);
    assert_eq!(minus(t, h), Vec::<(String, String)>::new());
    let (h, t) = (&from_hooks[PAIR_SUBAGENT], &from_transcripts[PAIR_SUBAGENT]);
    assert_eq!(minus(h, t), Vec::<(String, String)>::new(), "every hook call is in the transcript");
    assert_eq!(minus(t, h), sub_transcript_only);
    assert_eq!(h.len(), 35, "27 reads, 5 globs (hooks call them Grep), 3 greps");
}

/// The Subagent call's card and the subagent's run, from one replay's output events.
fn check_nesting(events: &[toolstream_schemas::OutputEvent], what: &str) {
    let child = events
        .iter()
        .find_map(|e| match &e.kind {
            Output::RunOpened { context: Some(c), .. } if c.parent.is_some() => {
                Some((e.run.clone(), c.parent.clone().unwrap()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{what}: no nested run"));
    let (run, parent) = child;
    assert_eq!(&*run.session, PAIR_SUBAGENT, "{what}");
    assert_eq!(&*parent.session, PAIR_MAIN, "{what}");
    let task_card = events.iter().find_map(|e| match &e.kind {
        Output::Card(c) if c.source_tool.kind() == Some(ToolKind::Task) => Some((e.run.clone(), c.call.clone())),
        _ => None,
    });
    let (task_run, task_call) = task_card.unwrap_or_else(|| panic!("{what}: no Subagent card"));
    assert_eq!(&*task_run.session, PAIR_MAIN, "{what}");
    assert_eq!(task_call, parent.call, "{what}: the subagent's run names its Subagent call");
    // The child closes before its task call's card: sinks can nest it.
    let closed = events.iter().position(|e| e.run == run && matches!(e.kind, Output::RunClosed { .. })).unwrap();
    let card = events.iter().position(|e| matches!(&e.kind, Output::Card(c) if c.call == task_call)).unwrap();
    assert!(closed < card, "{what}");
}

#[test]
fn the_subagent_run_is_nested_under_its_subagent_call() {
    let (Some(log), Some(dir)) =
        (toolstream_testkit::fixture(PAIR_HOOKS), toolstream_testkit::fixture(PAIR_TRANSCRIPTS))
    else {
        return;
    };
    let (events, _) = common::collect(&[&log]);
    check_nesting(&events, "hooks");
    let sub = dir.join("subagents").join(format!("{PAIR_SUBAGENT}.jsonl"));
    let main = dir.join(format!("{PAIR_MAIN}.jsonl"));
    let (events, _) = common::collect(&[&sub, &main]);
    check_nesting(&events, "transcripts");

    // Cards: the subagent's run is headed as one, between its call's start and its card.
    let cards = common::toolstream(&["replay", log.to_str().unwrap()], None);
    assert_eq!(cards.code, 0, "{}", cards.stderr);
    let head = cards.stdout.find("── Cursor subagent run 1 · composer-2.5-fast ──").expect("the subagent's header");
    let task = cards.stdout.find("● Cursor subagent Summarize repository architecture").unwrap();
    assert!(head < task, "{}", cards.stdout);

    // pi: one session for the conversation; the subagent's calls are its Subagent call's output.
    for (what, args) in [
        ("hooks", vec!["replay".to_owned(), log.display().to_string()]),
        (
            "transcripts",
            vec![
                "replay".to_owned(),
                "--from-cursor-transcripts".to_owned(),
                dir.parent().unwrap().display().to_string(),
            ],
        ),
    ] {
        let out = common::tempdir();
        let mut argv: Vec<String> = args;
        argv.extend(["--sink".to_owned(), format!("pi-sessions={}", out.display())]);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let run = common::toolstream(&argv, None);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        let files: Vec<PathBuf> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "{what}: one session for the conversation and its subagent: {files:?}");
        let lines: Vec<Value> =
            std::fs::read_to_string(&files[0]).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let msgs: Vec<&Value> = lines.iter().filter(|e| e["type"] == "message").map(|e| &e["message"]).collect();
        let prompts: Vec<&str> =
            msgs.iter().filter(|m| m["role"] == "user").map(|m| m["content"][0]["text"].as_str().unwrap()).collect();
        assert_eq!(prompts.len(), 6, "{what}: every prompt of the conversation");
        let task = msgs
            .iter()
            .find(|m| m["role"] == "toolResult" && m["content"][0]["text"].as_str().unwrap().starts_with("subagent "))
            .unwrap_or_else(|| panic!("{what}: no subagent result"));
        let text = task["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Subagent run"), "{what}: {text}");
        let subagent_calls = text.lines().filter(|l| l.starts_with("● ") || l.starts_with("✗ ")).count();
        let expected = if what == "hooks" { 35 } else { 39 };
        assert_eq!(subagent_calls, expected, "{what}: every call of the subagent: {text}");
    }
}
