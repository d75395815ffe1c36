//! The worked examples of SPEC §5, §6, §6b and §6c, end to end through one shard's stages
//! (intake → shell delta → lifecycle → run → usage, as the binary runs them: one actix actor per
//! stage): a small input stream in, the output events checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::support;

use std::sync::Arc;

use toolstream_actors::item::Item;
use toolstream_schemas::{
    Input, InputEvent, Output, OutputEvent, ResultStatus, RunEnd, RunStart, RunStatus, ShellStream, SourcePos,
    StopReason, TokenUsage, Tool, ToolEvent, ToolKind, Usage,
};

const S: &str = "session-1";

fn at(t: u64, kind: Input) -> Item {
    Item::Input(InputEvent { session: Arc::from(S), at_ms: Some(t), pos: SourcePos::default(), kind })
}

fn tool(id: &str, kind: ToolKind, args: &str, result: Option<&str>) -> Box<ToolEvent> {
    let mut tool = Tool::Known(kind);
    if kind == ToolKind::Mcp {
        let v: serde_json::Value = serde_json::from_str(args).unwrap();
        tool = tool.reclassified_for_mcp(v["toolName"].as_str());
    }
    let mut ev = ToolEvent::from_json(id, tool, Some(args), result.map(|v| (ResultStatus::Success, v))).unwrap();
    // A reclassified MCP call keeps its MCP wire name.
    ev.wire_name = kind.spec().cli_key.into();
    Box::new(ev)
}

fn start(t: u64, prompt: &str) -> Vec<Item> {
    vec![
        at(t, Input::RunStarted(Box::new(RunStart { cwd: Some("/w".into()), ..RunStart::default() }))),
        at(t, Input::UserPrompt { text: prompt.into() }),
    ]
}

fn end(t: u64) -> Item {
    at(
        t,
        Input::RunEnded(Box::new(RunEnd {
            status: RunStatus::Finished,
            result_text: None,
            usage: None,
            error: None,
            duration_ms: None,
            incomplete: false,
            extra: vec![],
        })),
    )
}

/// The items and an end of source through the shard's stages as the binary runs them: actix
/// actors, one per stage (properties.rs checks the pure chain gives the same output).
fn run(mut items: Vec<Item>) -> Vec<OutputEvent> {
    items.push(Item::EndOfSource);
    support::through_actors(vec![items])
}

fn lifecycle_lines(out: &[OutputEvent]) -> Vec<String> {
    out.iter()
        .filter_map(|e| match &e.kind {
            Output::LifecycleLine { title, label, .. } => Some(format!("{title}: {label}")),
            _ => None,
        })
        .collect()
}

fn cards(out: &[OutputEvent]) -> Vec<(String, String)> {
    out.iter()
        .filter_map(|e| match &e.kind {
            Output::Card(c) => Some((c.headline.clone(), c.content.clone())),
            _ => None,
        })
        .collect()
}

fn message_ends(out: &[OutputEvent]) -> Vec<(StopReason, Usage, u64)> {
    out.iter()
        .filter_map(|e| match &e.kind {
            Output::MessageEnded { stop_reason, usage, .. } => Some((*stop_reason, **usage, e.at_ms)),
            _ => None,
        })
        .collect()
}

#[test]
fn slow_mcp_external_search_gets_one_line_and_a_fast_one_none() {
    let mcp = r#"{"toolName":"external_search","args":{"q":"x"}}"#;
    let mut slow = start(0, "go");
    slow.push(at(1000, Input::ToolStarted(tool("m", ToolKind::Mcp, mcp, None))));
    slow.push(at(1100, Input::ToolCompleted(tool("m", ToolKind::Mcp, mcp, Some(r#"{"content":[]}"#)))));
    slow.push(end(1200));
    let out = run(slow);
    assert_eq!(lifecycle_lines(&out), vec!["Cursor MCP: external_search"]);
    assert_eq!(cards(&out).len(), 1);

    let mut fast = start(0, "go");
    fast.push(at(1000, Input::ToolStarted(tool("m", ToolKind::Mcp, mcp, None))));
    fast.push(at(1020, Input::ToolCompleted(tool("m", ToolKind::Mcp, mcp, Some(r#"{"content":[]}"#)))));
    fast.push(end(1200));
    let out = run(fast);
    assert!(lifecycle_lines(&out).is_empty());
    assert_eq!(cards(&out).len(), 1, "only the card");
}

#[test]
fn two_slow_identical_npm_test_shells_give_one_line_and_two_cards() {
    let args = r#"{"command":"npm test"}"#;
    let done = r#"{"exitCode":0,"stdout":"ok","stderr":""}"#;
    let mut items = start(0, "test it");
    items.push(at(10, Input::ToolStarted(tool("a", ToolKind::Shell, args, None))));
    items.push(at(12, Input::ToolStarted(tool("b", ToolKind::Shell, args, None))));
    items.push(at(900, Input::ToolCompleted(tool("a", ToolKind::Shell, args, Some(done)))));
    items.push(at(950, Input::ToolCompleted(tool("b", ToolKind::Shell, args, Some(done)))));
    items.push(end(1000));
    let out = run(items);
    assert_eq!(lifecycle_lines(&out), vec!["Cursor shell: npm test"]);
    assert_eq!(
        cards(&out),
        vec![("$ npm test".to_owned(), "ok".to_owned()), ("$ npm test".to_owned(), "ok".to_owned())]
    );
}

#[test]
fn overlapping_shells_get_no_attribution_and_show_no_output_twice() {
    let empty = r#"{"exitCode":0,"stdout":"","stderr":""}"#;
    let mut items = start(0, "go");
    items.push(at(10, Input::ToolStarted(tool("a", ToolKind::Shell, r#"{"command":"make a"}"#, None))));
    items.push(at(11, Input::ToolStarted(tool("b", ToolKind::Shell, r#"{"command":"make b"}"#, None))));
    items.push(at(20, Input::ShellOutput { call_id: None, stream: ShellStream::Stdout, data: "built\n".into() }));
    items.push(at(30, Input::ToolCompleted(tool("a", ToolKind::Shell, r#"{"command":"make a"}"#, Some(empty)))));
    items.push(at(40, Input::ToolCompleted(tool("b", ToolKind::Shell, r#"{"command":"make b"}"#, Some(empty)))));
    items.push(end(100));
    let out = run(items);
    assert_eq!(
        cards(&out),
        vec![("$ make a".to_owned(), "(no output)".to_owned()), ("$ make b".to_owned(), "(no output)".to_owned())]
    );
    assert!(!out.iter().any(|e| matches!(e.kind, Output::ShellProgress { .. })));
}

#[test]
fn delta_output_fills_an_empty_successful_shell() {
    let args = r#"{"command":"ls"}"#;
    let mut items = start(0, "go");
    items.push(at(10, Input::ToolStarted(tool("a", ToolKind::Shell, args, None))));
    items
        .push(at(20, Input::ShellOutput { call_id: None, stream: ShellStream::Stdout, data: "a.txt\nb.txt\n".into() }));
    items.push(at(30, Input::ToolCompleted(tool("a", ToolKind::Shell, args, Some(r#"{"exitCode":0,"stdout":""}"#)))));
    items.push(end(100));
    let out = run(items);
    assert_eq!(cards(&out), vec![("$ ls".to_owned(), "a.txt\nb.txt".to_owned())]);
    let progress: Vec<String> = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::ShellProgress { line, .. } => Some(line.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(progress, vec!["a.txt"]);
}

fn turn_usage() -> Input {
    Input::TurnUsage(TokenUsage {
        input_tokens: 25432,
        output_tokens: 612,
        cache_read_tokens: 24000,
        cache_write_tokens: 123,
        reasoning_tokens: None,
    })
}

#[test]
fn turn_ended_usage_100ms_after_a_completion_lands_on_the_tool_use_message() {
    let args = r#"{"path":"/w/a.rs"}"#;
    let mut items = start(0, "read it");
    items.push(at(5, Input::TextDelta { text: "Reading.".into() }));
    items.push(at(10, Input::ToolStarted(tool("r", ToolKind::Read, args, None))));
    items.push(at(50, Input::ToolCompleted(tool("r", ToolKind::Read, args, Some(r#"{"content":"fn main() {}"}"#)))));
    items.push(at(150, turn_usage()));
    items.push(at(400, Input::TextDelta { text: "It is empty.".into() }));
    items.push(end(500));
    let out = run(items);
    let ends = message_ends(&out);
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].0, StopReason::ToolUse);
    assert_eq!(
        ends[0].1,
        Usage {
            input: 1309,
            output: 612,
            cache_read: 24000,
            cache_write: 123,
            total_tokens: 26044,
            ..Usage::default()
        }
    );
    // Settled at 50 + 75 = 125, usage arrived at 150 (within the 125 ms wait, on a 25 ms poll).
    assert_eq!(ends[0].2, 150);
    // The final message falls back to estimates.
    assert_eq!(ends[1].0, StopReason::Stop);
    assert_eq!((ends[1].1.cache_read, ends[1].1.output), (0, 3));
}

#[test]
fn the_usage_wait_polls_every_25ms() {
    let args = r#"{"path":"/w/a.rs"}"#;
    let mut items = start(0, "read it");
    items.push(at(10, Input::ToolStarted(tool("r", ToolKind::Read, args, None))));
    items.push(at(50, Input::ToolCompleted(tool("r", ToolKind::Read, args, Some(r#"{"content":"x"}"#)))));
    // Settled at 125; usage at 160 is seen by the poll at 175.
    items.push(at(160, turn_usage()));
    items.push(end(500));
    let out = run(items);
    let ends = message_ends(&out);
    assert_eq!((ends[0].0, ends[0].2, ends[0].1.input), (StopReason::ToolUse, 175, 1309));
}

#[test]
fn late_usage_never_lands_on_a_later_message() {
    let args = r#"{"path":"/w/a.rs"}"#;
    let mut items = start(0, "read it");
    items.push(at(10, Input::ToolStarted(tool("r", ToolKind::Read, args, None))));
    items.push(at(50, Input::ToolCompleted(tool("r", ToolKind::Read, args, Some(r#"{"content":"x"}"#)))));
    // Settles at 125, waits until 250 for usage: none comes, the message ends at 250.
    items.push(at(300, Input::TextDelta { text: "Next.".into() }));
    items.push(at(320, turn_usage()));
    items.push(end(500));
    let out = run(items);
    let ends = message_ends(&out);
    assert_eq!((ends[0].0, ends[0].2), (StopReason::ToolUse, 250));
    assert_eq!(ends[0].1.cache_read, 0);
    assert_eq!(ends[1].1.cache_read, 0, "the late usage is discarded, not given to the next message");
    assert!(out.iter().any(|e| matches!(&e.kind, Output::Diagnostic { phase, .. } if phase == "usage_discarded")));
}

#[test]
fn cards_completing_while_the_batch_settles_share_its_message() {
    let r = |id: &str, path: &str| tool(id, ToolKind::Read, &format!(r#"{{"path":"/w/{path}"}}"#), Some("{}"));
    let mut items = start(0, "go");
    items.push(at(10, Input::ToolCompleted(r("1", "a"))));
    items.push(at(60, Input::ToolCompleted(r("2", "b")))); // within 75 ms: same batch
    items.push(at(400, Input::ToolCompleted(r("3", "c")))); // after the batch ended: the next one
    items.push(end(900));
    let out = run(items);
    let turns: Vec<(String, u32)> = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Card(c) => Some((c.headline.clone(), c.turn)),
            _ => None,
        })
        .collect();
    assert_eq!(turns, vec![("read a".into(), 0), ("read b".into(), 0), ("read c".into(), 1)]);
    let ends: Vec<StopReason> = message_ends(&out).into_iter().map(|e| e.0).collect();
    assert_eq!(ends, vec![StopReason::ToolUse, StopReason::ToolUse, StopReason::Stop]);
}
