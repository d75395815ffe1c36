//! Output-event builders shared by the pi sinks' unit tests.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{json, Value};
use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{
    Card, CardDetails, Cost, Output, OutputEvent, ResultStatus, RunId, RunStatus, ShellStream, StopReason, Tool, Usage,
};

pub fn run(session: &str, seq: u32) -> Arc<RunId> {
    Arc::new(RunId { session: session.into(), seq })
}

pub fn ev(run: &Arc<RunId>, at_ms: u64, kind: Output) -> OutputEvent {
    OutputEvent { run: run.clone(), at_ms, kind }
}

pub fn opened(model: &str, prompt: &str) -> Output {
    Output::RunOpened {
        cwd: Some("/work/p".into()),
        model: Some(model.into()),
        prompt: Some(prompt.into()),
        context: None,
    }
}

pub fn text(s: &str) -> Output {
    Output::Text { turn: 0, delta: s.into() }
}

pub fn thinking(s: &str) -> Output {
    Output::Thinking { turn: 0, delta: s.into() }
}

pub fn lifecycle(title: &str, label: &str) -> Output {
    Output::LifecycleLine { call: call_ref("c"), title: title.into(), label: label.into() }
}

pub fn progress() -> Output {
    Output::ShellProgress { call: call_ref("c"), stream: ShellStream::Stdout, line: "noise".into() }
}

pub fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read: 0,
        cache_write: 0,
        total_tokens: input + output,
        cost: Cost { input: 0.25, ..Cost::default() },
    }
}

pub fn ended(stop: StopReason, usage: Usage, error: Option<&str>) -> Output {
    Output::MessageEnded { turn: 0, stop_reason: stop, usage: Box::new(usage), error: error.map(str::to_owned) }
}

pub fn closed(status: RunStatus) -> Output {
    Output::RunClosed { status, final_text: String::new(), totals: Box::default(), error: None }
}

/// A card for call `k` of a run labelled `label`.
pub fn card(label: &str, k: u32, pi_tool: &str, args: Value, content: &str, is_error: bool) -> Output {
    Output::Card(Box::new(Card {
        turn: 0,
        call: call_ref(&format!("call-{k}")),
        replay_id: format!("cursor-replay-{label}-tool-{k}"),
        source_tool: Tool::from_name("shell"),
        pi_tool: pi_tool.to_owned().into(),
        title: "Cursor shell".into(),
        summary: String::new(),
        headline: String::new(),
        args,
        content: content.into(),
        result_text: content.into(),
        preview: Vec::new(),
        preview_hidden: 0,
        diff: Vec::new(),
        diff_hidden: 0,
        details: Arc::new(CardDetails {
            source_tool_name: "shell".into(),
            title: "Cursor shell".into(),
            status: Some(if is_error { ResultStatus::Failure } else { ResultStatus::Success }),
            summary: (!is_error).then(String::new),
            variant: "native",
            ..CardDetails::default()
        }),
        is_error,
        started_ms: None,
        incomplete: None,
        completed_ms: None,
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    }))
}

/// The incomplete-call card the run emits into its last message (SPEC §5.3).
pub fn incomplete_card(label: &str, k: u32) -> Output {
    card(
        label,
        k,
        "cursor",
        json!({"activityTitle": "Cursor shell", "activitySummary": "SDK run failed", "incomplete": true}),
        "Cursor shell did not complete\nSDK run failed",
        true,
    )
}

/// Parse JSON lines.
pub fn lines(bytes: &[u8]) -> Vec<Value> {
    std::str::from_utf8(bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
