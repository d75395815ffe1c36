//! Every real capture in `../shared/fixtures/cursor-cli/`: decodes without errors, reports only
//! genuinely unknown tool keys, keeps the run invariants (one terminal message end per message,
//! one close per run), and shows each piece of assistant text exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use toolstream_schemas::{Output, ToolKind};

/// The `*ToolCall` keys of a capture that the registry does not know, computed independently of
/// the decoder: straight from the JSON.
fn unknown_keys_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(obj) = v.get("tool_call").and_then(Value::as_object) {
            for k in obj.keys().filter(|k| k.ends_with("ToolCall")) {
                if ToolKind::from_cli_key(k).is_none() {
                    out.insert(k.trim_end_matches("ToolCall").to_owned());
                }
            }
        }
    }
    out
}

#[test]
fn stats_json_reports_no_decode_errors_and_only_genuinely_unknown_tools() {
    let captures = common::cli_captures();
    for path in &captures {
        let name = path.file_name().unwrap().to_string_lossy();
        let run = common::toolstream(&["stats", "--json", path.to_str().unwrap()], None);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let stats: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        for key in ["lines", "runs", "calls_by_tool", "unknown_tools", "decode_errors"] {
            assert!(stats.get(key).is_some(), "{name}: stats lacks {key}");
        }
        assert_eq!(stats["decode_errors"], 0, "{name}: {}", stats["decode_error_samples"]);
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(stats["lines"], text.lines().count(), "{name}");
        let reported: BTreeSet<String> = stats["unknown_tools"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(reported, unknown_keys_in(&text), "{name}");
        // Every tool the stats name is a registry name or one of the unknown ones.
        for tool in stats["calls_by_tool"].as_object().unwrap().keys() {
            assert!(ToolKind::from_canonical(tool).is_some() || reported.contains(tool), "{name}: {tool}");
        }
    }
}

#[test]
fn every_message_ends_once_and_every_run_closes_once() {
    for path in common::cli_captures() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (events, stats) = common::collect(&[&path]);
        let mut open: BTreeMap<(String, u32, u32), u32> = BTreeMap::new();
        let mut closed_runs = BTreeSet::new();
        let mut opened_runs = BTreeSet::new();
        for ev in &events {
            let run = (ev.run.session.to_string(), ev.run.seq);
            assert!(!closed_runs.contains(&run) || ev.run.seq == 0, "{name}: event after RunClosed: {ev:?}");
            match &ev.kind {
                Output::RunOpened { .. } => assert!(opened_runs.insert(run.clone()), "{name}: opened twice"),
                Output::MessageStarted { turn } => {
                    *open.entry((run.0.clone(), run.1, *turn)).or_default() += 1;
                }
                Output::MessageEnded { turn, .. } => {
                    let n = open.get_mut(&(run.0.clone(), run.1, *turn)).expect("end without start");
                    *n += 100;
                }
                Output::RunClosed { .. } => assert!(closed_runs.insert(run), "{name}: closed twice"),
                _ => {}
            }
        }
        assert_eq!(opened_runs, closed_runs, "{name}: every opened run closes");
        assert_eq!(closed_runs.len() as u64, stats.output.runs, "{name}");
        for (k, n) in open {
            assert_eq!(n, 101, "{name}: message {k:?} must start once and end once");
        }
    }
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn assistant_text_is_emitted_exactly_once() {
    let mut checked = 0;
    for path in common::cli_captures() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(result) = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "result")
            .and_then(|v| v["result"].as_str().map(str::to_owned))
        else {
            continue;
        };
        let (events, _) = common::collect(&[&path]);
        let emitted: String = events
            .iter()
            .filter_map(|e| match &e.kind {
                Output::Text { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(squash(&emitted), squash(&result), "{name}");
        checked += 1;
    }
    if common::cli_fixtures().is_some() {
        assert!(checked >= 10, "only {checked} captures had a result line");
    }
}

#[test]
fn partial_output_capture_shows_each_piece_of_text_once() {
    let Some(dir) = common::cli_fixtures() else { return };
    let (events, _) = common::collect(&[&dir.join("skill-eval-lab__run-0016__head50.jsonl")]);
    let text: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Text { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        text,
        "I'll find the roof quick calculator's \"Clear entries\" button and rename it to match the actual clear \
         behavior, without changing anything else."
    );
    let incomplete: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::IncompleteCall(i) => Some((i.source_tool.name().to_owned(), i.reason.text(), i.visible)),
            _ => None,
        })
        .collect();
    // Three parallel discovery calls, cut off by the truncated capture: the run failed (no
    // result), so they are shown, not suppressed as stale starts.
    assert_eq!(
        incomplete,
        vec![
            ("grep".to_owned(), "stream ended without a result", true),
            ("grep".to_owned(), "stream ended without a result", true),
            ("glob".to_owned(), "stream ended without a result", true)
        ]
    );
}
