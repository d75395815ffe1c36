//! The `@cursor/sdk` recording path end to end, on the project's own `examples/sdk-demo.jsonl`:
//! completions merged over their starts, step completions that repeat a delta rendered once,
//! text boundaries, MCP web search reclassified, tool errors, and `RunResult.usage` ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use toolstream_schemas::{Output, RunStatus, StopReason};

#[test]
fn sdk_recording_replays_as_cards() {
    let demo = common::example("sdk-demo.jsonl");
    let run = common::toolstream(&["replay", "--color", "never", demo.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("sdk_demo", run.stdout);
    let out = &run.stdout;
    // The read completed by a delta (result only) and repeated by a step: one card, with the path
    // taken from the start.
    assert_eq!(out.matches("● read src/routes/users.ts").count(), 1, "{out}");
    assert!(out.contains("✗ Cursor web search express 5 async handler 404\n    Error: web search is rate limited"));
    assert!(out.contains("+17   if (!user) {"));
}

#[test]
fn sdk_events_have_the_right_shape() {
    let (events, stats) = common::collect(&[&common::example("sdk-demo.jsonl")]);
    assert_eq!((stats.output.runs, stats.decode_errors, stats.output.calls), (1, 0, 4));
    let text: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Text { turn: 0, delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    // Two assistant messages of one turn, separated by a blank line at the step boundary.
    assert_eq!(text, "Let me look at the route handler.\n\nReading it now.");
    let cards: Vec<(String, String, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Card(c) => Some((c.source_tool.name().to_owned(), c.pi_tool.clone(), c.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        cards,
        vec![
            ("read".to_owned(), "read".to_owned(), false),
            ("webSearch".to_owned(), "cursor".to_owned(), true),
            // old/new strings recorded: the native pi edit card fits truthfully.
            ("edit".to_owned(), "edit".to_owned(), false),
            ("shell".to_owned(), "bash".to_owned(), false),
        ]
    );
    let ends: Vec<StopReason> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Output::MessageEnded { stop_reason, .. } => Some(*stop_reason),
            _ => None,
        })
        .collect();
    assert_eq!(ends.last(), Some(&StopReason::Stop));
    assert!(ends[..ends.len() - 1].iter().all(|r| *r == StopReason::ToolUse), "{ends:?}");
    let closed = events.iter().find_map(|e| match &e.kind {
        Output::RunClosed { status, totals, final_text, .. } => Some((*status, totals.clone(), final_text.clone())),
        _ => None,
    });
    let (status, totals, final_text) = closed.unwrap();
    assert_eq!(status, RunStatus::Finished);
    // RunResult.usage is never used (SPEC §1.2): the recorded 999999s must not appear.
    assert_eq!(totals.reported_usage, None);
    assert!(final_text.starts_with("Unknown ids now get a 404"));
}

#[test]
fn ignored_sdk_update_types_are_counted_not_dropped_silently() {
    let recording = concat!(
        r#"{"at_ms":1,"start":{"session_id":"s","cwd":"/w","model":"m","prompt":"p"}}"#,
        "\n",
        r#"{"at_ms":2,"delta":{"type":"token-delta","tokens":3}}"#,
        "\n",
        r#"{"at_ms":3,"delta":{"type":"step-started"}}"#,
        "\n",
        r#"{"at_ms":4,"wait":{"status":"finished","result":"ok"}}"#,
        "\n",
    );
    let (_, stats) = common::collect_bytes(recording.as_bytes());
    assert_eq!((stats.output.runs, stats.ignored_updates, stats.decode_errors), (1, 2, 0));
}
