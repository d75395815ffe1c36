//! The `@cursor/sdk` shapes captured by pi-cursor-sdk (`../shared/fixtures/pi-cursor-sdk/`) parse as
//! recording lines, and their tool payloads read with the typed tool models.

// Test helpers outside `#[test]` fns may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use toolstream_schemas::cursor_cli::tool_models::{parse_args, parse_success, Unmodeled};
use toolstream_schemas::cursor_sdk::{
    parse_record, ConversationStep, InteractionUpdate, SdkRecord, SdkRecordBody, SdkToolCall,
};
use toolstream_schemas::{RunStatus, TokenUsage, Tool};

fn fixture(rel: &str) -> Option<Value> {
    let path = toolstream_testkit::fixture(&format!("pi-cursor-sdk/{rel}"))?;
    Some(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// A captured `{channel, args}` callback as a recording line.
fn record_of(i: usize, callback: &Value) -> SdkRecord {
    let at_ms = callback.get("elapsedMs").cloned().unwrap_or(json!(i));
    let line = match callback["channel"].as_str() {
        Some("onDelta") => json!({"at_ms": at_ms, "delta": callback["args"]["update"]}),
        Some("onStep") => json!({"at_ms": at_ms, "step": callback["args"]["step"]}),
        other => panic!("unexpected channel {other:?}"),
    };
    parse_record(&line.to_string()).unwrap_or_else(|e| panic!("callback {i}: {e}"))
}

/// The tool call's args and success value are fully typed by the tool models.
fn assert_tool_payloads_typed(call: &SdkToolCall) {
    let Some(Tool::Known(kind)) = call.tool() else { panic!("unknown tool {:?}", call.tool_name()) };
    if let Some(args) = &call.args {
        let parsed = parse_args(kind, &args.to_string()).unwrap();
        assert!(parsed.unmodeled_fields().is_empty(), "{kind} args: {:?}", parsed.unmodeled_fields());
    }
    if let Some(result) = &call.result {
        assert!(result.is_success(), "{kind}: {result:?}");
        let parsed = parse_success(kind, &result.value.as_ref().unwrap().to_string()).unwrap();
        assert!(parsed.unmodeled_fields().is_empty(), "{kind} value: {:?}", parsed.unmodeled_fields());
    }
}

#[test]
fn cloud_activity_callbacks_parse_and_their_tools_are_typed() {
    let Some(f) = fixture("nathannli/cursor-cloud-activity-callbacks-2026-07-19.json") else {
        return;
    };
    let (mut calls, mut texts) = (Vec::new(), String::new());
    for (i, cb) in f["callbacks"].as_array().unwrap().iter().enumerate() {
        match record_of(i, cb).body {
            SdkRecordBody::Delta(InteractionUpdate::ToolCallStarted(u) | InteractionUpdate::ToolCallCompleted(u)) => {
                assert!(u.call_id.is_some());
                calls.push(u.tool_call.unwrap());
            }
            SdkRecordBody::Step(ConversationStep::ToolCall(call)) => calls.push(call),
            SdkRecordBody::Delta(InteractionUpdate::TextDelta(t)) => texts.push_str(t.text.as_deref().unwrap()),
            other => panic!("callback {i}: unexpected {other:?}"),
        }
    }
    assert_eq!(texts, "CLOUD_ACTIVITY_FIXTURE_OK");
    let names: Vec<_> = calls.iter().map(|c| c.tool_name().unwrap()).collect();
    assert_eq!(names, ["read", "read", "shell", "shell", "task", "task"]);
    calls.iter().for_each(assert_tool_payloads_typed);
}

#[test]
fn text_boundaries_follow_their_deltas() {
    let Some(f) = fixture("sudokai/cursor-text-boundaries-1.0.32.json") else {
        return;
    };
    let (mut since_boundary, mut last_message, mut boundaries) = (String::new(), String::new(), 0);
    for (i, cb) in f["callbacks"].as_array().unwrap().iter().enumerate() {
        let record = record_of(i, cb);
        assert_eq!(record.at_ms, cb["elapsedMs"].as_u64());
        match record.body {
            SdkRecordBody::Delta(InteractionUpdate::TextDelta(t)) => {
                since_boundary.push_str(t.text.as_deref().unwrap())
            }
            SdkRecordBody::Step(ConversationStep::AssistantMessage(m)) => {
                // Each assistantMessage step repeats exactly the text streamed since the last one.
                assert_eq!(m.text.as_deref(), Some(since_boundary.as_str()), "step {i}");
                last_message = std::mem::take(&mut since_boundary);
                boundaries += 1;
            }
            other => panic!("callback {i}: unexpected {other:?}"),
        }
    }
    assert_eq!(boundaries, 3);
    assert_eq!(Some(last_message.as_str()), f["result"].as_str());
}

#[test]
fn turn_ended_usage_reads_as_reported() {
    let Some(f) = fixture("sudokai/cursor-sdk-turn-ended-usage-1.0.23.json") else {
        return;
    };
    let turns = f["observedRawTurnEnded"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    for (i, turn) in turns.iter().enumerate() {
        let line = json!({"at_ms": i, "delta": {"type": "turn-ended", "usage": turn["usage"]}});
        let SdkRecordBody::Delta(InteractionUpdate::TurnEnded(t)) = parse_record(&line.to_string()).unwrap().body
        else {
            panic!("turn {i}")
        };
        let usage = t.usage.unwrap();
        assert!(usage.extra.is_empty());
        let u = &turn["usage"];
        let n = |k: &str| u[k].as_u64().unwrap();
        assert_eq!(
            usage.to_token_usage(),
            TokenUsage {
                input_tokens: n("inputTokens"),
                output_tokens: n("outputTokens"),
                cache_read_tokens: n("cacheReadTokens"),
                cache_write_tokens: n("cacheWriteTokens"),
                reasoning_tokens: None,
            }
        );
    }
}

#[test]
fn run_results_carry_documented_usage_and_sdk_errors() {
    if let Some(f) = fixture("nathannli/cursor-cloud-agent-usage-doc-2026-07-09.json") {
        let total = &f["response"]["totalUsage"];
        let line =
            json!({"at_ms": 1, "wait": {"id": f["response"]["runs"][0]["id"], "status": "finished", "usage": total}});
        let SdkRecordBody::Wait(w) = parse_record(&line.to_string()).unwrap().body else { panic!() };
        assert_eq!(w.run_status(), Some(RunStatus::Finished));
        let usage = w.usage.unwrap();
        assert_eq!(usage.to_token_usage().total(), total["totalTokens"].as_u64().unwrap());
        assert!(usage.extra.is_empty(), "totalTokens is typed");
    }
    if let Some(f) = fixture("sudokai/cursor-sdk-retriable-stalled-1.0.35.json") {
        let line = json!({"at_ms": 2, "wait": {"status": "error", "error": f["errorShape"]}});
        let SdkRecordBody::Wait(w) = parse_record(&line.to_string()).unwrap().body else { panic!() };
        assert_eq!((w.run_status(), w.error_text()), (Some(RunStatus::Error), Some("Connection stalled repeatedly")));
    }
}
