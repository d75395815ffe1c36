//! The `@cursor/sdk` recording path end to end, on the project's own `examples/sdk-demo.jsonl`:
//! completions merged over their starts, step completions that repeat a delta rendered once,
//! text boundaries, MCP web search reclassified, tool errors, and `RunResult.usage` ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use toolstream_schemas::{Output, RunStatus, StopReason};

#[test]
fn sdk_recording_replays_as_cards() {
    let demo = common::example("sdk-demo.jsonl");
    let run = common::toolstream(&["replay", "--color", "never", demo.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    common::assert_golden("sdk", "sdk_demo", &run.stdout);
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
            Output::Card(c) => Some((c.source_tool.name().to_owned(), c.pi_tool.to_string(), c.is_error)),
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

#[test]
fn a_completion_reported_under_another_id_is_traced_with_hashed_ids_only() {
    // The completion names another call id than its start (Cursor does this): it is matched by
    // `(tool, args)`, and the trace says so with both ids hashed, never raw (SPEC §9.3).
    let recording = concat!(
        r#"{"at_ms":1,"start":{"session_id":"s-ids","cwd":"/w","model":"m","prompt":"p"}}"#,
        "\n",
        r#"{"at_ms":2,"delta":{"type":"tool-call-started","callId":"started-edit","toolCall":{"type":"edit","args":{"path":"/w/a.txt","streamContent":"x"}}}}"#,
        "\n",
        r#"{"at_ms":3,"delta":{"type":"tool-call-completed","callId":"completed-edit","toolCall":{"type":"edit","args":{"path":"/w/a.txt","streamContent":"x"},"result":{"status":"success","value":{"path":"/w/a.txt","linesAdded":1}}}}}"#,
        "\n",
        r#"{"at_ms":4,"wait":{"status":"finished","result":"ok"}}"#,
        "\n",
    );
    let dir = common::tempdir();
    let input = dir.join("ids.jsonl");
    std::fs::write(&input, recording).unwrap();
    let trace = dir.join("trace.jsonl");
    let run =
        common::toolstream(&["replay", "--sink", &format!("jsonl={}", trace.display()), input.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trace = std::fs::read_to_string(&trace).unwrap();
    for raw in ["started-edit", "completed-edit"] {
        assert!(!trace.contains(raw), "raw call id {raw} in the trace:\n{trace}");
    }
    let hash = |id: &str| toolstream_schemas::ids::hash8(id);
    let matched = trace
        .lines()
        .find(|l| l.contains("match-completion-by-fingerprint"))
        .unwrap_or_else(|| panic!("no matching record:\n{trace}"));
    assert!(matched.contains(&format!(r#""callIdHash":"{}""#, hash("started-edit"))), "{matched}");
    assert!(matched.contains(&format!(r#""reportedCallIdHash":"{}""#, hash("completed-edit"))), "{matched}");
    // One card, under the start's (hashed) id.
    let completed: Vec<&str> = trace.lines().filter(|l| l.contains(r#""phase":"tool_completed""#)).collect();
    assert_eq!(completed.len(), 1, "{trace}");
    assert!(completed[0].contains(&hash("started-edit")), "{}", completed[0]);
    let _ = std::fs::remove_dir_all(&dir);
}
