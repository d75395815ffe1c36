//! Scenario tests of the run coordinator: small input streams in, output events checked.

use std::sync::Arc;

use toolstream_schemas::{
    Input, InputEvent, Output, OutputEvent, ResultStatus, RunEnd, RunStart, RunStatus, SegmentKind, SourcePos,
    StopReason, Tool, ToolEvent, ToolKind,
};

use super::{Coordinator, CoordinatorConfig};
use crate::intake::IntakeCore;
use crate::item::{Item, RunOutput};

/// The run stage behind intake, as a shard runs it: intake matches the calls.
struct Stage {
    intake: IntakeCore,
    run: Coordinator,
    between: Vec<Item>,
}

impl Stage {
    fn new() -> Stage {
        Stage {
            intake: IntakeCore::default(),
            run: Coordinator::new(CoordinatorConfig::default()),
            between: Vec::new(),
        }
    }

    fn handle(&mut self, ev: InputEvent, out: &mut Vec<RunOutput>) {
        self.push(Item::Input(ev), out);
    }

    fn push(&mut self, item: Item, out: &mut Vec<RunOutput>) {
        self.intake.push(item, &mut self.between);
        for i in self.between.drain(..) {
            self.run.push(i, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<RunOutput>) {
        self.push(Item::EndOfSource, out);
    }
}

fn ev(session: &str, at: u64, kind: Input) -> InputEvent {
    InputEvent { session: Arc::from(session), at_ms: Some(at), pos: SourcePos::default(), kind }
}

fn tool(id: &str, kind: ToolKind, args: Option<&str>, result: Option<(&str, &str)>) -> Box<ToolEvent> {
    let result = result.map(|(arm, v)| (ResultStatus::from_key(arm), v));
    Box::new(ToolEvent::from_json(id, Tool::Known(kind), args, result).unwrap())
}

fn end(status: RunStatus, result: Option<&str>) -> Input {
    Input::RunEnded(Box::new(RunEnd {
        status,
        result_text: result.map(str::to_owned),
        usage: None,
        error: (status != RunStatus::Finished).then(|| "boom".to_owned()),
        duration_ms: None,
        incomplete: false,
        extra: vec![],
    }))
}

fn run(events: Vec<InputEvent>) -> Vec<OutputEvent> {
    let mut c = Stage::new();
    let mut out = Vec::new();
    for e in events {
        c.handle(e, &mut out);
    }
    c.finish(&mut out);
    sink_facing(out)
}

/// The run stage's outputs without the turn usages meant for the usage stage.
fn sink_facing(out: Vec<RunOutput>) -> Vec<OutputEvent> {
    out.into_iter()
        .filter_map(|o| match o {
            RunOutput::Event(e) => Some(e),
            RunOutput::TurnUsage { .. } => None,
        })
        .collect()
}

/// A compact trace: one short string per output event that matters here.
fn trace(out: &[OutputEvent]) -> Vec<String> {
    out.iter()
        .filter_map(|e| {
            Some(match &e.kind {
                Output::RunOpened { .. } => "open".into(),
                Output::MessageStarted { turn } => format!("msg{turn}"),
                Output::Text { delta, .. } => format!("text:{delta}"),
                Output::Thinking { delta, .. } => format!("think:{delta}"),
                Output::Card(c) => format!("card:{}{}", c.headline, if c.is_error { "!" } else { "" }),
                Output::IncompleteCall(i) => format!("incomplete:{}:{}:{}", i.title, i.reason.as_str(), i.visible),
                Output::MessageEnded { stop_reason, .. } => format!("end:{stop_reason:?}"),
                Output::RunClosed { status, .. } => format!("closed:{}", status.as_str()),
                _ => return None,
            })
        })
        .collect()
}

const S: &str = "s1";

fn start() -> InputEvent {
    ev(S, 0, Input::RunStarted(Box::new(RunStart { cwd: Some("/w".into()), ..RunStart::default() })))
}

#[test]
fn consolidated_segment_repeating_deltas_is_dropped_and_final_text_not_repeated() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::TextDelta { text: "Hello".into() }),
        ev(S, 2, Input::TextDelta { text: " world".into() }),
        ev(S, 3, Input::TextSegment { kind: SegmentKind::Consolidated, text: "Hello world".into() }),
        ev(S, 4, end(RunStatus::Finished, Some("Hello world"))),
    ]);
    assert_eq!(trace(&out), ["open", "msg0", "text:Hello", "text: world", "end:Stop", "closed:finished"]);
}

#[test]
fn result_extending_the_streamed_text_emits_only_the_rest() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::TextDelta { text: "Disconnect".into() }),
        ev(S, 2, end(RunStatus::Finished, Some("Disconnecting the CDP session..."))),
    ]);
    assert_eq!(
        trace(&out),
        ["open", "msg0", "text:Disconnect", "text:ing the CDP session...", "end:Stop", "closed:finished"]
    );
}

#[test]
fn completed_calls_split_the_turn_with_tool_use() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::ThinkingDelta { text: "hmm".into() }),
        ev(S, 2, Input::TextDelta { text: "Looking.".into() }),
        ev(S, 3, Input::ToolStarted(tool("a", ToolKind::Shell, Some(r#"{"command":"ls"}"#), None))),
        ev(S, 4, Input::ToolStarted(tool("b", ToolKind::Read, Some(r#"{"path":"/w/x"}"#), None))),
        ev(S, 5, Input::ToolCompleted(tool("b", ToolKind::Read, None, Some(("success", r#"{"content":"1"}"#))))),
        ev(S, 6, Input::ToolCompleted(tool("a", ToolKind::Shell, None, Some(("success", r#"{"exitCode":2}"#))))),
        ev(S, 7, Input::TextSegment { kind: SegmentKind::Final, text: "Done.".into() }),
        ev(S, 8, end(RunStatus::Finished, Some("Looking.Done."))),
    ]);
    assert_eq!(
        trace(&out),
        [
            "open",
            "msg0",
            "think:hmm",
            "text:Looking.",
            // completion order; args taken from the starts
            "card:read x",
            "card:$ ls!",
            "end:ToolUse",
            "msg1",
            "text:Done.",
            "end:Stop",
            "closed:finished"
        ]
    );
}

#[test]
fn after_text_a_stale_fast_local_start_is_trace_only_and_another_is_a_thinking_line() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::ToolStarted(tool("r", ToolKind::Read, Some(r#"{"path":"/w/a"}"#), None))),
        ev(S, 2, Input::ToolStarted(tool("s", ToolKind::Shell, Some(r#"{"command":"sleep 9"}"#), None))),
        ev(S, 3, Input::TextDelta { text: "Answer.".into() }),
        ev(S, 4, end(RunStatus::Finished, Some("Answer."))),
    ]);
    assert_eq!(
        trace(&out),
        [
            "open",
            "msg0",
            "text:Answer.",
            "incomplete:Cursor read:no-completion-at-run-end:false",
            // SPEC §5.3: finished with text → a thinking line in the last message, no card.
            "incomplete:Cursor shell:no-completion-at-run-end:true",
            "think:Cursor shell did not complete: missing completion\n",
            "end:Stop",
            "closed:finished"
        ]
    );
}

#[test]
fn without_text_even_a_stale_read_is_an_error_card_in_a_tool_use_message() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::ToolStarted(tool("r", ToolKind::Read, Some(r#"{"path":"/w/a"}"#), None))),
        ev(S, 2, end(RunStatus::Finished, None)),
    ]);
    assert_eq!(
        trace(&out),
        [
            "open",
            "msg0",
            "incomplete:Cursor read:no-completion-at-run-end:true",
            "card:read a did not complete: missing completion!",
            "end:ToolUse",
            "msg1",
            "end:Stop",
            "closed:finished"
        ]
    );
}

#[test]
fn a_failed_run_shows_an_error_card_before_its_error_message() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::ToolStarted(tool("a", ToolKind::Mcp, Some(r#"{"toolName":"x"}"#), None))),
        ev(S, 2, Input::TextDelta { text: "Working.".into() }),
        ev(S, 3, end(RunStatus::Error, None)),
    ]);
    assert_eq!(
        trace(&out),
        [
            "open",
            "msg0",
            "text:Working.",
            "incomplete:Cursor MCP:sdk-failure:true",
            "card:Cursor MCP x did not complete: SDK run failed!",
            "end:ToolUse",
            "msg1",
            "end:Error",
            "closed:error"
        ]
    );
}

#[test]
fn a_stream_that_ends_without_its_result_says_so_and_cancel_never_shows_a_card() {
    let out =
        run(vec![start(), ev(S, 1, Input::ToolStarted(tool("a", ToolKind::Mcp, Some(r#"{"toolName":"x"}"#), None)))]);
    let t = trace(&out);
    assert_eq!(t.last().map(String::as_str), Some("closed:error"));
    assert!(t.contains(&"incomplete:Cursor MCP:stream-ended:true".to_owned()), "{t:?}");
    assert!(t.contains(&"card:Cursor MCP x did not complete: stream ended without a result!".to_owned()), "{t:?}");
    assert!(t.contains(&"end:Error".to_owned()));

    let mut c = Stage::new();
    let mut out = Vec::new();
    c.handle(start(), &mut out);
    c.handle(ev(S, 1, Input::TextDelta { text: "Let me".into() }), &mut out);
    c.handle(ev(S, 2, Input::ToolStarted(tool("a", ToolKind::Task, Some("{}"), None))), &mut out);
    c.push(Item::Cancel, &mut out);
    c.finish(&mut out); // nothing left to close
    let events = sink_facing(out);
    let t = trace(&events);
    assert_eq!(
        t,
        [
            "open",
            "msg0",
            "text:Let me",
            "incomplete:Cursor subagent:abort:true",
            "think:Cursor subagent did not complete: aborted\n",
            "end:Aborted",
            "closed:cancelled"
        ]
    );
    let error = events.iter().find_map(|e| match &e.kind {
        Output::MessageEnded { error, .. } => error.clone(),
        _ => None,
    });
    assert_eq!(error.as_deref(), Some("Cancelled: Cursor run was cancelled."));
    assert_eq!(c.run.runs_open(), 0);
}

#[test]
fn a_new_run_before_result_closes_the_previous_one() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::TextDelta { text: "one".into() }),
        start(),
        ev(S, 2, Input::TextDelta { text: "two".into() }),
        ev(S, 3, end(RunStatus::Finished, None)),
    ]);
    let closed: Vec<(u32, RunStatus)> = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::RunClosed { status, .. } => Some((e.run.seq, *status)),
            _ => None,
        })
        .collect();
    assert_eq!(closed, vec![(1, RunStatus::Error), (2, RunStatus::Finished)]);
}

#[test]
fn sessions_are_independent_and_short_ids_do_not_collide() {
    // `Read_3` repeats across sessions: call state is keyed by (session, call id).
    let out = run(vec![
        ev("x", 0, Input::RunStarted(Box::default())),
        ev("y", 0, Input::RunStarted(Box::default())),
        ev("x", 1, Input::ToolStarted(tool("Read_3", ToolKind::Read, Some(r#"{"path":"a"}"#), None))),
        ev("y", 1, Input::ToolStarted(tool("Read_3", ToolKind::Read, Some(r#"{"path":"b"}"#), None))),
        ev("y", 2, Input::ToolCompleted(tool("Read_3", ToolKind::Read, None, Some(("success", "{}"))))),
        ev("x", 2, Input::ToolCompleted(tool("Read_3", ToolKind::Read, None, Some(("success", "{}"))))),
        ev("x", 3, end(RunStatus::Finished, None)),
        ev("y", 3, end(RunStatus::Finished, None)),
    ]);
    let cards: Vec<(String, String)> = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Card(c) => Some((e.run.session.to_string(), c.headline.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(cards, vec![("y".to_owned(), "read b".to_owned()), ("x".to_owned(), "read a".to_owned())]);
}

#[test]
fn a_repeated_completion_renders_once() {
    let done = || tool("a", ToolKind::Ls, Some(r#"{"path":"/w"}"#), Some(("success", "{}")));
    let out = run(vec![
        start(),
        ev(S, 1, Input::ToolCompleted(done())),
        ev(S, 2, Input::ToolCompleted(done())),
        ev(S, 3, end(RunStatus::Finished, None)),
    ]);
    assert_eq!(trace(&out).iter().filter(|l| l.starts_with("card:")).count(), 1);
}

#[test]
fn failed_runs_end_their_last_message_with_the_scrubbed_error() {
    let out = run(vec![start(), ev(S, 1, end(RunStatus::Error, None))]);
    let err = out.iter().find_map(|e| match &e.kind {
        Output::MessageEnded { stop_reason: StopReason::Error, error, .. } => error.clone(),
        _ => None,
    });
    assert_eq!(err.as_deref(), Some("boom"));
}

#[test]
fn events_after_the_run_closed_never_open_a_phantom_run() {
    let raw = serde_json::value::RawValue::from_string(r#"{"task_id":"t1"}"#.into()).unwrap();
    let out = run(vec![
        start(),
        ev(S, 1, end(RunStatus::Finished, None)),
        // A background task's notification and a late usage after the result.
        ev(S, 2, Input::Raw { what: "system/task_notification".into(), value: raw }),
        ev(S, 3, Input::TurnUsage(toolstream_schemas::TokenUsage::default())),
    ]);
    let closed = trace(&out).iter().filter(|l| l.starts_with("closed:")).count();
    assert_eq!(closed, 1);
    let late: Vec<&str> = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Diagnostic { phase, fields } if phase == "after_run_end" => fields["what"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(late, vec!["system/task_notification", "turn-usage"]);
}

#[test]
fn a_failed_runs_result_text_is_its_error_not_assistant_text() {
    let out = run(vec![start(), ev(S, 1, end(RunStatus::Error, Some("Request failed: Bearer sk-SECRET")))]);
    assert!(!trace(&out).iter().any(|l| l.starts_with("text:")), "{:?}", trace(&out));
}

#[test]
fn a_call_completing_exactly_at_the_settle_deadline_joins_the_batch() {
    let read =
        |id: &str, p: &str| tool(id, ToolKind::Read, Some(&format!(r#"{{"path":"/w/{p}"}}"#)), Some(("success", "{}")));
    let out = run(vec![
        start(),
        ev(S, 1000, Input::ToolCompleted(read("a", "a"))),
        // Settles at 1075: a completion at 1075 is not after the deadline (SPEC §2).
        ev(S, 1075, Input::ToolCompleted(read("b", "b"))),
        ev(S, 2000, end(RunStatus::Finished, None)),
    ]);
    assert_eq!(
        trace(&out),
        ["open", "msg0", "card:read a", "card:read b", "end:ToolUse", "msg1", "end:Stop", "closed:finished"]
    );
}

#[test]
fn thinking_is_bounded_per_message() {
    let big = "x".repeat(30_000);
    let out = run(vec![
        start(),
        ev(S, 1, Input::ThinkingDelta { text: big.as_str().into() }),
        ev(S, 2, Input::ThinkingDelta { text: big.as_str().into() }),
        ev(S, 3, Input::ThinkingDelta { text: big.into() }),
        ev(S, 4, end(RunStatus::Finished, None)),
    ]);
    let thinking: String = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Thinking { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(thinking.ends_with("\n[Cursor activity trace truncated]"), "{}", &thinking[thinking.len() - 60..]);
    assert_eq!(thinking.matches('x').count(), 50_000);
}

#[test]
fn the_prompt_reaches_sinks_scrubbed() {
    let out = run(vec![start(), ev(S, 1, Input::UserPrompt { text: "use api_key=SECRET please".into() })]);
    let prompt = out.iter().find_map(|e| match &e.kind {
        Output::RunOpened { prompt, .. } => prompt.clone(),
        _ => None,
    });
    assert_eq!(prompt.as_deref(), Some("use api_key=[redacted] please"));
}

#[test]
fn a_known_secret_never_reaches_sinks_in_assistant_text_or_thinking_even_split_across_deltas() {
    let key = "cursor_live_Kq8Zr2Xx";
    let cfg = CoordinatorConfig {
        scrubber: crate::present::scrub::Scrubber::new(Some(key.into())),
        ..CoordinatorConfig::default()
    };
    let mut c = Coordinator::new(cfg);
    let mut out = Vec::new();
    for e in [
        start(),
        ev(S, 1, Input::ThinkingDelta { text: "the key cursor_li".into() }),
        ev(S, 2, Input::ThinkingDelta { text: "ve_Kq8Zr2Xx is set".into() }),
        ev(S, 3, Input::TextDelta { text: "Your key is cursor_".into() }),
        ev(S, 4, Input::TextDelta { text: "live_Kq8".into() }),
        ev(S, 5, Input::TextDelta { text: "Zr2Xx. cursor_".into() }),
    ] {
        c.handle(e, &mut out);
    }
    // A progress line: what the text held back goes first, as it is.
    let line = crate::item::Line {
        session: Arc::from(S),
        at_ms: 6,
        call: toolstream_schemas::ids::call_ref("c1"),
        title: "Cursor shell".into(),
        text: "building".into(),
    };
    c.push(crate::item::Item::ShellProgress { line, stream: toolstream_schemas::ShellStream::Stdout }, &mut out);
    c.handle(ev(S, 7, end(RunStatus::Finished, Some("Your key is cursor_live_Kq8Zr2Xx. cursor_"))), &mut out);
    c.finish(&mut out);
    let events = sink_facing(out);
    assert_eq!(
        trace(&events),
        [
            "open",
            "msg0",
            "think:the key ",
            "think:[redacted] is set",
            "text:Your key is ",
            "text:[redacted]. ",
            "text:cursor_",
            "end:Stop",
            "closed:finished"
        ]
    );
    let progress = events.iter().position(|e| matches!(e.kind, Output::ShellProgress { .. })).unwrap();
    assert!(matches!(&events[progress - 1].kind, Output::Text { delta, .. } if delta == "cursor_"));
    let final_text = events.iter().find_map(|e| match &e.kind {
        Output::RunClosed { final_text, .. } => Some(final_text.clone()),
        _ => None,
    });
    assert_eq!(final_text.as_deref(), Some("Your key is [redacted]. cursor_"));
    assert!(!format!("{events:?}").contains("Kq8"), "no piece of the key survives");
}

#[test]
fn without_known_secrets_text_passes_as_it_came() {
    let out = run(vec![
        start(),
        ev(S, 1, Input::TextDelta { text: "sk-".into() }),
        ev(S, 2, Input::TextDelta { text: "proj password=x".into() }),
        ev(S, 3, end(RunStatus::Finished, None)),
    ]);
    assert_eq!(trace(&out), ["open", "msg0", "text:sk-", "text:proj password=x", "end:Stop", "closed:finished"]);
}

#[test]
fn a_failed_source_fails_its_open_runs_with_its_message_as_a_reported_failure() {
    let mut c = Stage::new();
    let mut out = Vec::new();
    c.handle(start(), &mut out);
    c.handle(ev(S, 1, Input::ToolStarted(tool("a", ToolKind::Mcp, Some(r#"{"toolName":"x"}"#), None))), &mut out);
    c.handle(ev(S, 2, Input::TextDelta { text: "Working.".into() }), &mut out);
    c.push(Item::SourceFailed(Arc::from("cursor-agent exited with status 3: boom")), &mut out);
    c.push(Item::EndOfSource, &mut out); // nothing left to close
    let events = sink_facing(out);
    // The same as a `result` that reported the failure (`a_failed_run_shows_…` above).
    assert_eq!(
        trace(&events),
        [
            "open",
            "msg0",
            "text:Working.",
            "incomplete:Cursor MCP:sdk-failure:true",
            "card:Cursor MCP x did not complete: SDK run failed!",
            "end:ToolUse",
            "msg1",
            "end:Error",
            "closed:error"
        ]
    );
    let error = events.iter().find_map(|e| match &e.kind {
        Output::MessageEnded { stop_reason: StopReason::Error, error, .. } => error.clone(),
        _ => None,
    });
    assert_eq!(error.as_deref(), Some("cursor-agent exited with status 3: boom"));
    // A run that already ended is left alone.
    let mut out = Vec::new();
    c.handle(ev("s2", 3, Input::RunStarted(Box::default())), &mut out);
    c.handle(ev("s2", 4, end(RunStatus::Finished, Some("done"))), &mut out);
    c.push(Item::SourceFailed(Arc::from("late")), &mut out);
    let t = trace(&sink_facing(out));
    assert_eq!(t.iter().filter(|l| l.starts_with("closed:")).collect::<Vec<_>>(), ["closed:finished"]);
}

/// SDK runs report only their last message as the result (SPEC §1.2): however long it is, it is
/// recognised as streamed text — not repeated, not reported as a mismatch — though the run keeps
/// only digests of its text.
#[test]
fn a_long_last_message_as_the_result_is_not_repeated_nor_a_mismatch() {
    let last = "All done. ".repeat(2000);
    let out = run(vec![
        start(),
        ev(S, 1, Input::TextDelta { text: "Let me look.".into() }),
        ev(S, 2, Input::TextSegment { kind: SegmentKind::Consolidated, text: "Let me look.".into() }),
        ev(S, 3, Input::TextBoundary),
        ev(S, 4, Input::TextDelta { text: last[..10_000].into() }),
        ev(S, 5, Input::TextDelta { text: last[10_000..].into() }),
        ev(S, 6, Input::TextSegment { kind: SegmentKind::Consolidated, text: last.clone() }),
        ev(S, 7, Input::TextBoundary),
        ev(S, 8, end(RunStatus::Finished, Some(&last))),
    ]);
    let text: String = out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::Text { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, format!("Let me look.\n\n{last}"));
    let mismatch = out.iter().any(|e| {
        matches!(&e.kind, Output::Diagnostic { fields, .. }
            if fields.get("action").and_then(|v| v.as_str()) == Some("keep-streamed-text-over-result"))
    });
    assert!(!mismatch, "the result is the last message, not a disagreement");
}

#[test]
fn a_run_its_input_ends_inside_or_its_source_ends_as_incomplete_says_so_and_a_reported_end_does_not() {
    let incomplete_of = |events: Vec<InputEvent>| -> Vec<bool> {
        run(events)
            .iter()
            .filter_map(|e| match &e.kind {
                Output::RunClosed { totals, .. } => Some(totals.incomplete),
                _ => None,
            })
            .collect()
    };
    // Reported ends: finished and failed.
    assert_eq!(incomplete_of(vec![start(), ev(S, 1, end(RunStatus::Finished, Some("ok")))]), [false]);
    assert_eq!(incomplete_of(vec![start(), ev(S, 1, end(RunStatus::Error, None))]), [false]);
    // The input ends inside the run (no result).
    assert_eq!(incomplete_of(vec![start(), ev(S, 1, Input::TextDelta { text: "hi".into() })]), [true]);
    // The source ends it as incomplete (a hook turn whose conversation ended first).
    let by_source = RunEnd {
        status: RunStatus::Error,
        result_text: None,
        usage: None,
        error: Some("incomplete".into()),
        duration_ms: None,
        incomplete: true,
        extra: vec![],
    };
    assert_eq!(incomplete_of(vec![start(), ev(S, 1, Input::RunEnded(Box::new(by_source)))]), [true]);
}
