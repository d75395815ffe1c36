//! Decoding of `@cursor/sdk` recordings (SPEC §1.2) into canonical input events. Completed tool
//! deltas often carry only their result: the decoder remembers each started call so a completion
//! is merged over it (completed fields win).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;
use toolstream_schemas::cursor_sdk::{
    parse_record, ConversationStep, InteractionUpdate, RunResult, SdkRecordBody, SdkToolCall, ShellOutputEvent,
    ToolCallUpdate,
};
use toolstream_schemas::{
    CallArgs, CallIdent, Input, InputEvent, Int, ResultStatus, RunEnd, RunStart, RunStatus, SegmentKind, SourcePos,
    Tool, ToolEvent, ToolKind, ToolResult,
};

/// Decodes SDK recording lines. Holds the session of the latest `start` record and the started
/// tool calls still waiting for their completion.
#[derive(Debug, Default)]
pub struct SdkDecoder {
    session: Option<Arc<str>>,
    started: HashMap<String, SdkToolCall>,
    /// Updates of the types SPEC §1.2 says to ignore (but count).
    ignored: u64,
}

impl SdkDecoder {
    /// Updates ignored so far.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    pub fn decode(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        let rec = parse_record(text).map_err(|e| e.to_string())?;
        if let SdkRecordBody::Start(start) = &rec.body {
            self.session = Some(Arc::from(start.session_id.as_deref().unwrap_or("")));
            self.started.clear();
        }
        let session = self.session.clone().unwrap_or_else(|| Arc::from(""));
        let at_ms = rec.at_ms;
        let mut push = |kind: Input| out.push(InputEvent { session: session.clone(), at_ms, pos, kind });
        match rec.body {
            SdkRecordBody::Start(start) => {
                let prompt = start.prompt.clone();
                push(Input::RunStarted(Box::new(RunStart {
                    cwd: start.cwd.clone(),
                    model: start.model_id().map(str::to_owned),
                    prompt: None,
                    context: None,
                    extra: to_unknown(start.extra)?,
                })));
                if let Some(text) = prompt {
                    push(Input::UserPrompt { text });
                }
            }
            SdkRecordBody::Delta(update) => self.delta(update, &mut push)?,
            SdkRecordBody::Step(step) => match step {
                ConversationStep::AssistantMessage(m) => {
                    if let Some(text) = m.text.filter(|t| !t.is_empty()) {
                        push(Input::TextSegment { kind: SegmentKind::Consolidated, text });
                    }
                    push(Input::TextBoundary);
                }
                ConversationStep::ToolCall(tc) => {
                    // A step completion may repeat a delta completion; the coordinator dedupes.
                    push(Input::ToolCompleted(Box::new(tool_event(String::new(), None, tc)?)));
                }
                ConversationStep::ThinkingMessage(_) => self.ignored += 1,
                ConversationStep::Unknown { type_name, raw } => {
                    push(Input::Raw { what: format!("step:{type_name}"), value: raw_of(&raw)? });
                }
            },
            SdkRecordBody::Wait(result) => push(Input::RunEnded(Box::new(run_end(result)?))),
            SdkRecordBody::Unknown => {
                let value = RawValue::from_string(text.to_owned()).map_err(|e| e.to_string())?;
                push(Input::Raw { what: "sdk-record".into(), value });
            }
        }
        Ok(())
    }

    fn delta(&mut self, update: InteractionUpdate, push: &mut impl FnMut(Input)) -> Result<(), String> {
        use InteractionUpdate as U;
        match update {
            U::TextDelta(d) => push(Input::TextDelta { text: d.text.unwrap_or_default().into() }),
            U::ThinkingDelta(d) => push(Input::ThinkingDelta { text: d.text.unwrap_or_default().into() }),
            U::ThinkingCompleted(c) => {
                push(Input::ThinkingCompleted { duration_ms: c.thinking_duration_ms.and_then(Int::as_u64) })
            }
            U::PartialToolCall(u) => {
                if let Some(ev) = self.tool_update(u, false)? {
                    push(Input::ToolPartial(Box::new(ev)));
                }
            }
            U::ToolCallStarted(u) => {
                if let Some(ev) = self.tool_update(u, false)? {
                    push(Input::ToolStarted(Box::new(ev)));
                }
            }
            U::ToolCallCompleted(u) => {
                if let Some(ev) = self.tool_update(u, true)? {
                    push(Input::ToolCompleted(Box::new(ev)));
                }
            }
            U::ShellOutputDelta(d) => match d.event {
                Some(ShellOutputEvent::Output { stream, chunk }) => {
                    push(Input::ShellOutput { call_id: None, stream, data: chunk.data.unwrap_or_default() })
                }
                Some(ShellOutputEvent::Start(v)) => {
                    push(Input::Raw { what: "shell-output-delta:start".into(), value: raw_of(&v)? })
                }
                Some(ShellOutputEvent::Exit(v)) => {
                    push(Input::Raw { what: "shell-output-delta:exit".into(), value: raw_of(&v)? })
                }
                Some(ShellOutputEvent::Unknown(v)) => {
                    push(Input::Raw { what: "shell-output-delta".into(), value: raw_of(&v)? })
                }
                None => {}
            },
            U::Summary(s) => {
                let raw = Value::from(s.summary.unwrap_or_default());
                push(Input::Raw { what: "summary".into(), value: raw_of(&raw)? });
            }
            U::TurnEnded(t) => match t.usage.as_ref().map(|u| (u.checked(), u)) {
                Some((Some(usage), _)) => push(Input::TurnUsage(usage)),
                // Missing or negative counts: not usage to account; kept for the trace.
                Some((None, u)) => {
                    let raw = serde_json::json!({
                        "inputTokens": u.input_tokens.map(|n| n.get()),
                        "outputTokens": u.output_tokens.map(|n| n.get()),
                    });
                    push(Input::Raw { what: "turn-ended:unusable-usage".into(), value: raw_of(&raw)? });
                }
                None => {}
            },
            U::Ignored { .. } => self.ignored += 1,
            U::Unknown { type_name, raw } => {
                push(Input::Raw { what: format!("delta:{type_name}"), value: raw_of(&raw)? });
            }
        }
        Ok(())
    }

    /// A tool-call delta as a tool event; completions are merged over their start.
    fn tool_update(&mut self, u: ToolCallUpdate, completed: bool) -> Result<Option<ToolEvent>, String> {
        let call_id = u.call_id.unwrap_or_default();
        let Some(mut tc) = u.tool_call else {
            return Ok(None);
        };
        if completed {
            if let Some(started) = self.started.remove(&call_id) {
                tc = tc.or_from(&started);
            }
        } else if !call_id.is_empty() {
            let merged = match self.started.remove(&call_id) {
                Some(prev) => tc.clone().or_from(&prev),
                None => tc.clone(),
            };
            self.started.insert(call_id.clone(), merged);
        }
        tool_event(call_id, u.model_call_id, tc).map(Some)
    }
}

fn raw_of(v: &Value) -> Result<Box<RawValue>, String> {
    to_raw_value(v).map_err(|e| e.to_string())
}

fn to_unknown(extra: serde_json::Map<String, Value>) -> Result<Vec<(String, Box<RawValue>)>, String> {
    extra.into_iter().map(|(k, v)| Ok((k, raw_of(&v)?))).collect()
}

fn tool_event(call_id: String, model_call_id: Option<String>, tc: SdkToolCall) -> Result<ToolEvent, String> {
    let wire_name = tc.tool_name().unwrap_or("unknown").to_owned();
    let mut tool = tc.tool().unwrap_or_else(|| Tool::unknown("unknown"));
    if tool == Tool::Known(ToolKind::Mcp) {
        let name = tc.args.as_ref().and_then(|a| a.get("toolName").or_else(|| a.get("tool_name")));
        tool = tool.reclassified_for_mcp(name.and_then(Value::as_str));
    }
    // The decoder read the args as a tree already: the stages read that one.
    let args = tc.args.map(CallArgs::from_tree).transpose().map_err(|e| e.to_string())?.map(Arc::new);
    let result = match tc.result {
        None => None,
        Some(r) if r.is_success() => Some(ToolResult::with_extra(
            ResultStatus::Success,
            raw_of(r.value.as_ref().unwrap_or(&Value::Null))?,
            to_unknown(r.extra)?,
        )),
        Some(r) => {
            let value = match &r.error {
                Some(Value::Object(o)) => Value::Object(o.clone()),
                _ => serde_json::json!({ "error": r.error_text() }),
            };
            let status = match r.status.as_deref() {
                Some("error") | None => ResultStatus::Error,
                Some(other) => ResultStatus::from_key(other),
            };
            Some(ToolResult::with_extra(status, raw_of(&value)?, to_unknown(r.extra)?))
        }
    };
    Ok(ToolEvent {
        call_id,
        tool,
        wire_name,
        args,
        result,
        model_call_id,
        started_at_ms: None,
        completed_at_ms: None,
        openai_call: None,
        reported_call_id: None,
        call: CallIdent::default(),
        extra: to_unknown(tc.extra)?,
    })
}

fn run_end(r: RunResult) -> Result<RunEnd, String> {
    let status = r.run_status().unwrap_or(RunStatus::Error);
    let error = match status {
        RunStatus::Finished => None,
        _ => {
            let text = r.error_text().map_or_else(|| format!("run {}", status.as_str()), str::to_owned);
            // The run's error code, when it reports one, follows its message (SPEC §5.4).
            Some(match r.error_code() {
                Some(code) => format!("{text} (code: {code})"),
                None => text,
            })
        }
    };
    Ok(RunEnd {
        status,
        result_text: r.result,
        // RunResult.usage is a run total the SDK does not define consistently: never used (SPEC §1.2).
        usage: None,
        error,
        duration_ms: r.duration_ms.and_then(Int::as_u64),
        incomplete: false,
        extra: to_unknown(r.extra)?,
    })
}
