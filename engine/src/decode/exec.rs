//! Decoding of exec recordings (SPEC §1.4, `--format cursor-exec`): the agent backend's server
//! messages and its client's answers in proto3-JSON form (`toolstream_schemas::cursor_exec`),
//! into canonical input events.
//!
//! - The first message opens a run (exec recordings name no session: the session is empty).
//! - `interactionUpdate`: `textDelta` → text, `thinkingDelta`/`thinkingCompleted` → thinking,
//!   `turnEnded` → its usage and the end of the run (finished). `heartbeat` and `tokenDelta`
//!   carry nothing to show and are dropped; the tool deltas (`toolCallStarted`, …) repeat what the
//!   exec request and its result say and are passed through as raw events, like any other update.
//! - `execServerMessage` → a started call, its args in the Cursor CLI's shape (the same
//!   messages), carrying the OpenAI tool call it maps to (SPEC §9.5) for the OpenAI sink.
//! - `execClientMessage` → that call completed with the client's result; `shellResult` is a
//!   success iff its arm is (exit code 0). `execClientControlMessage` adds nothing.
//! - `conversationCheckpointUpdate`, `kvServerMessage`, … → raw events.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Value};
use toolstream_schemas::cursor_exec::to_openai::{to_tool_call, OpenAiToolCall};
use toolstream_schemas::cursor_exec::{
    ExecClientMessage, ExecRecordLine, ExecRequest, ExecResult, ExecServerMessage, InteractionUpdate, McpContentItem,
    Outcome, ShellResult,
};
use toolstream_schemas::{
    CallArgs, CallIdent, Input, InputEvent, Int, ResultStatus, RunEnd, RunStatus, SourcePos, TokenUsage, Tool,
    ToolEvent, ToolKind, ToolResult,
};

/// A started exec call, kept until its result.
#[derive(Debug)]
struct Started {
    key: String,
    tool: Tool,
    wire_name: String,
    args: Arc<CallArgs>,
    request: ExecRequest,
    /// The OpenAI tool call it maps to.
    openai: Option<Arc<OpenAiToolCall>>,
}

/// Decodes exec recording lines; holds whether a run is open and the calls waiting for results.
#[derive(Debug, Default)]
pub struct ExecDecoder {
    run_open: bool,
    /// By exec id and by numeric id (a client message may carry either).
    started: Vec<Started>,
    by_id: HashMap<u32, String>,
}

impl ExecDecoder {
    pub fn decode(&mut self, text: &str, pos: SourcePos, out: &mut Vec<InputEvent>) -> Result<(), String> {
        let line: ExecRecordLine = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let session: Arc<str> = Arc::from("");
        let at_ms = line.at_ms;
        let mut push = |kind: Input| out.push(InputEvent { session: session.clone(), at_ms, pos, kind });
        if !self.run_open {
            self.run_open = true;
            self.started.clear();
            self.by_id.clear();
            push(Input::RunStarted(Box::default()));
        }
        if let Some(update) = line.interaction_update {
            self.update(update, &mut push)?;
        } else if let Some(msg) = line.exec_server_message {
            self.request(&msg, &mut push)?;
        } else if let Some(msg) = line.exec_client_message {
            self.result(msg, &mut push)?;
        } else if line.exec_client_control_message.is_some() {
            // `stream_close` after a result: nothing more to say.
        } else {
            let (what, value) = [
                ("conversationCheckpointUpdate", line.conversation_checkpoint_update),
                ("kvServerMessage", line.kv_server_message),
                ("execServerControlMessage", line.exec_server_control_message),
                ("interactionQuery", line.interaction_query),
            ]
            .into_iter()
            .find_map(|(w, v)| v.map(|v| (w, v)))
            .unwrap_or_else(|| ("exec-record", serde_json::from_str(text).unwrap_or(Value::Null)));
            push(Input::Raw { what: what.into(), value: raw(&value)? });
        }
        Ok(())
    }

    fn update(&mut self, u: InteractionUpdate, push: &mut impl FnMut(Input)) -> Result<(), String> {
        if let Some(d) = u.text_delta {
            push(Input::TextDelta { text: d.text.into() });
        } else if let Some(d) = u.thinking_delta {
            push(Input::ThinkingDelta { text: d.text.into() });
        } else if let Some(c) = u.thinking_completed {
            push(Input::ThinkingCompleted { duration_ms: c.thinking_duration_ms.and_then(Int::as_u64) });
        } else if let Some(t) = u.turn_ended {
            let n = |v: Option<Int>| v.and_then(Int::as_u64);
            if let (Some(input), Some(output)) = (n(t.input_tokens), n(t.output_tokens)) {
                push(Input::TurnUsage(TokenUsage {
                    input_tokens: input,
                    output_tokens: output,
                    cache_read_tokens: n(t.cache_read_tokens).unwrap_or(0),
                    cache_write_tokens: n(t.cache_write_tokens).unwrap_or(0),
                    reasoning_tokens: None,
                }));
            }
            push(Input::RunEnded(Box::new(RunEnd {
                status: RunStatus::Finished,
                result_text: None,
                usage: None,
                error: None,
                duration_ms: None,
                incomplete: false,
                extra: Vec::new(),
            })));
            self.run_open = false;
        } else if u.heartbeat.is_some() || u.token_delta.is_some() {
            // Nothing to show.
        } else {
            let (what, value) = [
                ("toolCallStarted", u.tool_call_started),
                ("toolCallCompleted", u.tool_call_completed),
                ("partialToolCall", u.partial_tool_call),
            ]
            .into_iter()
            .find_map(|(w, v)| v.map(|v| (w, v)))
            .unwrap_or(("interactionUpdate", Value::Object(u.other)));
            push(Input::Raw { what: format!("interactionUpdate:{what}"), value: raw(&value)? });
        }
        Ok(())
    }

    fn request(&mut self, msg: &ExecServerMessage, push: &mut impl FnMut(Input)) -> Result<(), String> {
        let request = msg.request();
        let (tool, wire_name, args) = canonical_args(&request);
        let args = Arc::new(CallArgs::from_tree(args).map_err(|e| e.to_string())?);
        let key = msg.call_key();
        let openai = to_tool_call(msg).map(Arc::new);
        push(Input::ToolStarted(Box::new(ToolEvent {
            call_id: key.clone(),
            tool: tool.clone(),
            wire_name: wire_name.clone(),
            args: Some(args.clone()),
            result: None,
            model_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            openai_call: openai.clone(),
            reported_call_id: None,
            call: CallIdent::default(),
            extra: Vec::new(),
        })));
        self.by_id.insert(msg.numeric_id(), key.clone());
        self.started.retain(|s| s.key != key);
        self.started.push(Started { key, tool, wire_name, args, request, openai });
        Ok(())
    }

    fn result(&mut self, msg: ExecClientMessage, push: &mut impl FnMut(Input)) -> Result<(), String> {
        let key = if msg.exec_id.is_empty() { self.by_id.get(&msg.id).cloned() } else { Some(msg.exec_id.clone()) };
        let Some(i) = key.and_then(|k| self.started.iter().position(|s| s.key == k)) else {
            // A result for no request of this recording: kept, not guessed at.
            return push_raw(push, "execClientMessage:unmatched", &serde_json::to_value(&msg).unwrap_or(Value::Null));
        };
        let s = self.started.remove(i);
        let (status, value) = canonical_result(&s.request, msg.result);
        push(Input::ToolCompleted(Box::new(ToolEvent {
            call_id: s.key,
            tool: s.tool,
            wire_name: s.wire_name,
            args: Some(s.args),
            result: Some(ToolResult::new(status, raw(&value)?)),
            model_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            // The card is built from the completion: it carries the OpenAI tool call too.
            openai_call: s.openai,
            reported_call_id: None,
            call: CallIdent::default(),
            extra: Vec::new(),
        })));
        Ok(())
    }
}

fn push_raw(push: &mut impl FnMut(Input), what: &str, value: &Value) -> Result<(), String> {
    push(Input::Raw { what: what.into(), value: raw(value)? });
    Ok(())
}

fn raw(v: &Value) -> Result<Box<RawValue>, String> {
    to_raw_value(v).map_err(|e| e.to_string())
}

/// The canonical tool, the wire name (`shellArgs`, …) and the args in the Cursor CLI's shape.
fn canonical_args(request: &ExecRequest) -> (Tool, String, Value) {
    let known = |k| Tool::Known(k);
    match request {
        ExecRequest::Shell { command, cwd, timeout_ms } => (
            known(ToolKind::Shell),
            "shellArgs".into(),
            json!({ "command": command, "workingDirectory": cwd, "timeout": timeout_ms }),
        ),
        ExecRequest::Read { path } => (known(ToolKind::Read), "readArgs".into(), json!({ "path": path })),
        ExecRequest::Ls { path } => (known(ToolKind::Ls), "lsArgs".into(), json!({ "path": path })),
        ExecRequest::Grep { pattern, path, glob } => {
            (known(ToolKind::Grep), "grepArgs".into(), json!({ "pattern": pattern, "path": path, "glob": glob }))
        }
        ExecRequest::Glob { pattern, path } => {
            (known(ToolKind::Glob), "grepArgs".into(), json!({ "globPattern": pattern, "targetDirectory": path }))
        }
        ExecRequest::Write { path, content } => {
            (known(ToolKind::Write), "writeArgs".into(), json!({ "path": path, "fileText": content }))
        }
        ExecRequest::Delete { path } => (known(ToolKind::Delete), "deleteArgs".into(), json!({ "path": path })),
        ExecRequest::Mcp { name, tool_name, provider, args } => {
            let tool = known(ToolKind::Mcp).reclassified_for_mcp(Some(tool_name));
            let args = json!({ "name": name, "toolName": tool_name, "providerIdentifier": provider, "args": args });
            (tool, "mcpArgs".into(), args)
        }
        ExecRequest::Other { arm, value } => {
            let name = arm.trim_end_matches("Args").trim_end_matches("_args");
            (Tool::unknown(name), arm.clone(), value.clone())
        }
    }
}

/// The status and the inner object of a client result, in the Cursor CLI's result shape.
fn canonical_result(request: &ExecRequest, result: ExecResult) -> (ResultStatus, Value) {
    match result {
        ExecResult::ShellResult(ShellResult::Success(o)) => (ResultStatus::Success, value(&o)),
        ExecResult::ShellResult(ShellResult::Failure(o)) => (ResultStatus::Failure, value(&o)),
        ExecResult::ReadResult(o) => outcome(o),
        ExecResult::LsResult(o) => outcome(o),
        ExecResult::GrepResult(Outcome::Success(g)) if matches!(request, ExecRequest::Glob { .. }) => {
            // A file search reads as the CLI's glob result: the files.
            let files: Vec<String> = g.workspace_results.values().flat_map(|r| r.files.files.clone()).collect();
            let total = files.len();
            (
                ResultStatus::Success,
                json!({ "pattern": g.pattern, "path": g.path, "files": files, "totalFiles": total }),
            )
        }
        ExecResult::GrepResult(o) => outcome(o),
        ExecResult::WriteResult(o) => outcome(o),
        ExecResult::DeleteResult(o) => outcome(o),
        ExecResult::McpResult(Outcome::Success(m)) if m.is_error => {
            let text: Vec<&str> = m
                .content
                .iter()
                .filter_map(|c| match c {
                    McpContentItem::Text(t) => Some(t.text.as_str()),
                    McpContentItem::Image(_) => None,
                })
                .collect();
            (ResultStatus::Error, json!({ "error": text.join("\n") }))
        }
        ExecResult::McpResult(o) => outcome(o),
    }
}

fn outcome<S: serde::Serialize>(o: Outcome<S>) -> (ResultStatus, Value) {
    match o {
        Outcome::Success(s) => (ResultStatus::Success, value(&s)),
        Outcome::Error(e) => (ResultStatus::Error, json!({ "error": e.error })),
    }
}

fn value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode(lines: &[&str]) -> Vec<Input> {
        let mut d = ExecDecoder::default();
        let mut out = Vec::new();
        for l in lines {
            d.decode(l, SourcePos::default(), &mut out).unwrap();
        }
        out.into_iter().map(|e| e.kind).collect()
    }

    #[test]
    fn a_shell_request_and_its_result_are_one_call() {
        let events = decode(&[
            r#"{"interactionUpdate":{"textDelta":{"text":"Running it."}}}"#,
            r#"{"execServerMessage":{"id":1,"execId":"e1","shellArgs":{"command":"false","workingDirectory":"/w"}}}"#,
            r#"{"execClientMessage":{"id":1,"execId":"e1","shellResult":{"failure":{"command":"false","exitCode":1,"stdout":"","stderr":"boom"}}}}"#,
            r#"{"execClientControlMessage":{"streamClose":{"id":1}}}"#,
            r#"{"interaction_update":{"turn_ended":{"input_tokens":"10","output_tokens":"2"}}}"#,
        ]);
        assert!(matches!(events[0], Input::RunStarted(_)));
        assert!(matches!(&events[1], Input::TextDelta { text } if text == "Running it."));
        let Input::ToolStarted(s) = &events[2] else { panic!("{:?}", events[2]) };
        assert_eq!(s.tool, Tool::Known(ToolKind::Shell));
        assert!(s.extra.is_empty(), "the OpenAI call is a field of its own: {:?}", s.extra);
        assert_eq!(s.openai_call.as_ref().unwrap().name, "bash");
        let Input::ToolCompleted(c) = &events[3] else { panic!("{:?}", events[3]) };
        assert_eq!(c.openai_call, s.openai_call);
        let r = c.result.as_ref().unwrap();
        assert_eq!(r.status, ResultStatus::Failure);
        assert_eq!(serde_json::from_str::<Value>(r.value.get()).unwrap()["stderr"], "boom");
        assert!(matches!(events[4], Input::TurnUsage(TokenUsage { input_tokens: 10, output_tokens: 2, .. })));
        assert!(matches!(&events[5], Input::RunEnded(e) if e.status == RunStatus::Finished));
        assert_eq!(events.len(), 6);
    }

    #[test]
    fn a_result_matched_by_numeric_id_and_an_unmatched_one_kept_raw() {
        let events = decode(&[
            r#"{"execServerMessage":{"id":4,"grepArgs":{"glob":"*.rs","path":"src"}}}"#,
            r#"{"execClientMessage":{"id":4,"grepResult":{"success":{"pattern":"*.rs","path":"src","workspaceResults":{"src":{"files":{"files":["src/a.rs"],"totalFiles":1}}}}}}}"#,
            r#"{"execClientMessage":{"id":9,"lsResult":{"success":{"filesString":"x"}}}}"#,
        ]);
        let Input::ToolCompleted(c) = &events[2] else { panic!("{:?}", events[2]) };
        assert_eq!(c.tool, Tool::Known(ToolKind::Glob));
        assert_eq!(
            serde_json::from_str::<Value>(c.result.as_ref().unwrap().value.get()).unwrap()["files"][0],
            "src/a.rs"
        );
        assert!(matches!(&events[3], Input::Raw { what, .. } if what == "execClientMessage:unmatched"));
    }
}
