use std::sync::Arc;

use toolstream_schemas::{Output, OutputEvent, RunId, StopReason, TokenUsage, Usage};

use super::UsageCore;
use crate::item::RunOutput;

fn run_id() -> Arc<RunId> {
    Arc::new(RunId { session: Arc::from("s"), seq: 1 })
}

/// What the run stage hands over: an event, or a turn's usage.
enum K {
    Event(Output),
    Turn(TokenUsage),
}

impl From<Output> for K {
    fn from(o: Output) -> Self {
        K::Event(o)
    }
}

fn ev(at: u64, kind: impl Into<K>) -> RunOutput {
    match kind.into() {
        K::Event(kind) => RunOutput::Event(OutputEvent { run: run_id(), at_ms: at, kind }),
        K::Turn(usage) => RunOutput::TurnUsage { run: run_id(), at_ms: at, usage },
    }
}

fn turn(input: u64, output: u64, read: u64, write: u64) -> K {
    K::Turn(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: None,
    })
}

fn end(turn: u32, stop: StopReason) -> Output {
    Output::MessageEnded { turn, stop_reason: stop, usage: Box::default(), error: None }
}

fn card(content: &str) -> Output {
    let c = toolstream_schemas::Card {
        turn: 0,
        call: toolstream_schemas::CallRef { hash: "00000000".into() },
        replay_id: "r".into(),
        source_tool: toolstream_schemas::Tool::Known(toolstream_schemas::ToolKind::Read),
        pi_tool: "read".into(),
        title: "Cursor read".into(),
        summary: "a".into(),
        headline: "read a".into(),
        args: serde_json::json!({"path": "a"}),
        content: content.into(),
        result_text: content.into(),
        preview: vec![],
        preview_hidden: 0,
        diff: vec![],
        diff_hidden: 0,
        details: Default::default(),
        is_error: false,
        started_ms: None,
        incomplete: None,
        completed_ms: None,
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    };
    Output::Card(Box::new(c))
}

/// The usage of every MessageEnded.
fn usages(events: Vec<RunOutput>) -> Vec<Usage> {
    usages_with(UsageCore::default(), events)
}

fn usages_with(mut core: UsageCore, events: Vec<RunOutput>) -> Vec<Usage> {
    let mut out = Vec::new();
    for e in events {
        core.push(e, &mut out);
    }
    out.iter()
        .filter_map(|e| match &e.kind {
            Output::MessageEnded { usage, .. } => Some(**usage),
            _ => None,
        })
        .collect()
}

fn opened(prompt: &str) -> Output {
    Output::RunOpened { cwd: None, model: None, prompt: Some(prompt.into()), context: None }
}

#[test]
fn spec_example_turn_usage_lands_on_the_tool_use_message_and_the_final_one_estimates() {
    let u = usages(vec![
        ev(0, opened("twelve chars")),
        ev(1, Output::MessageStarted { turn: 0 }),
        ev(2, Output::Text { turn: 0, delta: "Looking".into() }),
        ev(10, card("1234")),
        ev(110, turn(25432, 612, 24000, 123)),
        ev(110, end(0, StopReason::ToolUse)),
        ev(200, Output::MessageStarted { turn: 1 }),
        ev(200, Output::Text { turn: 1, delta: "Done!!!!".into() }),
        ev(300, end(1, StopReason::Stop)),
        ev(
            300,
            Output::RunClosed {
                status: toolstream_schemas::RunStatus::Finished,
                final_text: String::new(),
                totals: Box::default(),
                error: None,
            },
        ),
    ]);
    assert_eq!(
        u[0],
        Usage {
            input: 1309,
            output: 612,
            cache_read: 24000,
            cache_write: 123,
            total_tokens: 26044,
            ..Usage::default()
        }
    );
    // Estimates: output ceil(8/4) = 2; input = the read result (ceil(4/4) = 1), counted once.
    assert_eq!((u[1].input, u[1].output, u[1].cache_read), (1, 2, 0));
    assert!(u[1].total_tokens >= u[1].input + u[1].output);
}

#[test]
fn the_prompt_is_input_once_per_run() {
    let u = usages(vec![
        ev(0, opened("abcdefgh")), // 2 tokens
        ev(1, Output::MessageStarted { turn: 0 }),
        ev(2, card("")),
        ev(3, end(0, StopReason::ToolUse)),
        ev(4, Output::MessageStarted { turn: 1 }),
        ev(5, end(1, StopReason::Stop)),
    ]);
    assert_eq!(u[0].input, 2);
    assert_eq!(u[1].input, 0);
}

#[test]
fn late_usage_is_discarded_never_given_to_a_later_message() {
    let u = usages(vec![
        ev(0, opened("")),
        ev(1, Output::MessageStarted { turn: 0 }),
        ev(2, card("x")),
        // waited 125 ms, no usage: the message ends with an estimate
        ev(202, end(0, StopReason::ToolUse)),
        ev(250, Output::MessageStarted { turn: 1 }),
        ev(251, Output::Text { turn: 1, delta: "next".into() }),
        // the first turn's usage, late
        ev(300, turn(5000, 100, 0, 0)),
        ev(400, end(1, StopReason::Stop)),
    ]);
    assert_eq!(u[1].cache_read, 0);
    assert_ne!(u[1].input, 5000);
    assert_eq!(u[1].output, 1);
}

#[test]
fn insane_usage_falls_back_to_estimates_and_usage_is_taken_once() {
    let u = usages(vec![
        ev(0, opened("")),
        ev(1, Output::MessageStarted { turn: 0 }),
        ev(2, Output::Text { turn: 0, delta: "abcd".into() }),
        // cache larger than the prompt: not sane
        ev(3, turn(10, 5, 20, 0)),
        ev(4, end(0, StopReason::ToolUse)),
        ev(5, Output::MessageStarted { turn: 1 }),
        ev(6, turn(100, 5, 0, 0)),
        ev(7, turn(999, 9, 0, 0)),
        ev(8, end(1, StopReason::Stop)),
    ]);
    assert_eq!((u[0].input, u[0].output), (0, 1));
    assert_eq!((u[1].input, u[1].output, u[1].total_tokens), (100, 5, 105));
}

#[test]
fn every_usage_carries_a_cost_object() {
    let u = usages(vec![ev(0, opened("")), ev(1, Output::MessageStarted { turn: 0 }), ev(2, end(0, StopReason::Stop))]);
    let json = serde_json::to_value(u[0]).unwrap();
    assert_eq!(json["cost"]["total"], 0.0);
}

#[test]
fn utf16_units_are_counted_from_utf8_and_while_serializing() {
    for s in ["", "plain", "café", "日本語", "🙂 ok", "a\u{10FFFF}b"] {
        assert_eq!(super::utf16_len(s), s.encode_utf16().count() as u64, "{s:?}");
    }
    let args = serde_json::json!({"command": "echo 🙂", "path": "/tmp/é", "n": [1, 2]});
    assert_eq!(super::json_utf16_len(&args), args.to_string().encode_utf16().count() as u64);
}

/// One message of a run of `model` whose turn reports `input` tokens of prompt.
fn one_turn(model: &str, input: u64, output: u64) -> Vec<RunOutput> {
    vec![
        ev(0, Output::RunOpened { cwd: None, model: Some(model.into()), prompt: Some("p".into()), context: None }),
        ev(1, Output::MessageStarted { turn: 0 }),
        ev(2, Output::Text { turn: 0, delta: "ok".into() }),
        ev(3, turn(input, output, 0, 0)),
        ev(4, end(0, StopReason::Stop)),
    ]
}

#[test]
fn turn_usage_is_checked_against_the_runs_model_and_entries_can_be_overridden() {
    use toolstream_schemas::models::ModelLimits;
    // composer-2.5 has a 200k window: 250k of prompt is a run total, not a turn's usage.
    let u = usages(one_turn("composer-2.5", 250_000, 10));
    assert_eq!((u[0].input, u[0].total_tokens), (1, 2), "estimated: {u:?}");
    // gpt-5.2 has 272k: the same turn is believed.
    let u = usages(one_turn("gpt-5.2", 250_000, 10));
    assert_eq!((u[0].input, u[0].total_tokens), (250_000, 250_010));
    // An override (a config entry) replaces the table's limits for that model.
    let mut cfg = super::UsageConfig::default();
    cfg.models.set("composer-2.5", ModelLimits { context_window: 1_000_000, max_tokens: 64_000 });
    let u = usages_with(UsageCore::new(cfg), one_turn("composer-2.5", 250_000, 10));
    assert_eq!(u[0].input, 250_000);
    // Unknown models count as 200,000 / 64,000.
    let u = usages(one_turn("some-future-model", 1_000, 64_001));
    assert_eq!(u[0].output, 1, "estimated: {u:?}");
}

#[test]
fn error_and_aborted_messages_carry_zero_usage() {
    for stop in [StopReason::Error, StopReason::Aborted] {
        let mut events = one_turn("composer-2.5", 1_000, 10);
        events[4] = ev(4, end(0, stop));
        assert_eq!(usages(events), [Usage::default()], "{stop:?}");
    }
}
