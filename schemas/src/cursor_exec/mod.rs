//! The Cursor agent backend's exec protocol in proto3-JSON form (SPEC §1.4, seed 002): the server
//! messages of a run (`interactionUpdate`, `execServerMessage`, `conversationCheckpointUpdate`, …)
//! and the client's answers (`execClientMessage` results, then `execClientControlMessage`
//! `streamClose`). Field names follow the proto3 JSON mapping (lowerCamelCase); the original
//! snake_case names are accepted too, as proto3 JSON parsers do.
//!
//! An exec *recording* is one such message per line, server and client messages interleaved in
//! the order they passed, each line optionally carrying toolstream's `atMs` (event time, ms).
//! There is no public capture of this protocol: the shapes here follow seed 002's protobuf
//! definitions; argument fields seed 002 does not spell out follow the Cursor CLI's tool-call
//! args (`workingDirectory`, `fileText`, …), which are the same messages.

pub mod to_openai;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::num::Int;

/// One line of an exec recording: exactly one of the message fields is set (a line with none is
/// kept as unknown by decoders).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRecordLine {
    #[serde(default, alias = "at_ms")]
    pub at_ms: Option<u64>,
    #[serde(default, alias = "interaction_update")]
    pub interaction_update: Option<InteractionUpdate>,
    #[serde(default, alias = "exec_server_message")]
    pub exec_server_message: Option<ExecServerMessage>,
    #[serde(default, alias = "conversation_checkpoint_update")]
    pub conversation_checkpoint_update: Option<Value>,
    #[serde(default, alias = "kv_server_message")]
    pub kv_server_message: Option<Value>,
    #[serde(default, alias = "exec_server_control_message")]
    pub exec_server_control_message: Option<Value>,
    #[serde(default, alias = "interaction_query")]
    pub interaction_query: Option<Value>,
    #[serde(default, alias = "exec_client_message")]
    pub exec_client_message: Option<ExecClientMessage>,
    #[serde(default, alias = "exec_client_control_message")]
    pub exec_client_control_message: Option<ExecClientControlMessage>,
}

/// The message field names a line of an exec recording may have (for format detection).
pub const RECORD_KEYS: &[&str] = &[
    "interactionUpdate",
    "interaction_update",
    "execServerMessage",
    "exec_server_message",
    "conversationCheckpointUpdate",
    "conversation_checkpoint_update",
    "kvServerMessage",
    "kv_server_message",
    "execServerControlMessage",
    "exec_server_control_message",
    "interactionQuery",
    "interaction_query",
    "execClientMessage",
    "exec_client_message",
    "execClientControlMessage",
    "exec_client_control_message",
];

/// `InteractionUpdate`: one of its fields is set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InteractionUpdate {
    #[serde(default, alias = "text_delta")]
    pub text_delta: Option<TextDelta>,
    #[serde(default, alias = "thinking_delta")]
    pub thinking_delta: Option<TextDelta>,
    #[serde(default, alias = "thinking_completed")]
    pub thinking_completed: Option<ThinkingCompleted>,
    #[serde(default, alias = "tool_call_started")]
    pub tool_call_started: Option<Value>,
    #[serde(default, alias = "tool_call_completed")]
    pub tool_call_completed: Option<Value>,
    #[serde(default, alias = "partial_tool_call")]
    pub partial_tool_call: Option<Value>,
    #[serde(default, alias = "token_delta")]
    pub token_delta: Option<Value>,
    #[serde(default, alias = "turn_ended")]
    pub turn_ended: Option<TurnEnded>,
    #[serde(default)]
    pub heartbeat: Option<Value>,
    /// Any other update, kept.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct TextDelta {
    #[serde(default)]
    pub text: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingCompleted {
    #[serde(default, alias = "thinking_duration_ms")]
    pub thinking_duration_ms: Option<Int>,
}

/// The end of the model's turn, with its usage when the backend reports it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnded {
    #[serde(default, alias = "input_tokens")]
    pub input_tokens: Option<Int>,
    #[serde(default, alias = "output_tokens")]
    pub output_tokens: Option<Int>,
    #[serde(default, alias = "cache_read_tokens")]
    pub cache_read_tokens: Option<Int>,
    #[serde(default, alias = "cache_write_tokens")]
    pub cache_write_tokens: Option<Int>,
}

/// `ExecServerMessage{id, exec_id, oneof …_args}`: the backend asks its client to run a tool.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecServerMessage {
    #[serde(default)]
    pub id: Option<Int>,
    #[serde(default, alias = "exec_id")]
    pub exec_id: Option<String>,
    #[serde(default, alias = "shell_args")]
    pub shell_args: Option<ShellArgs>,
    #[serde(default, alias = "shell_stream_args")]
    pub shell_stream_args: Option<ShellArgs>,
    #[serde(default, alias = "write_args")]
    pub write_args: Option<WriteArgs>,
    #[serde(default, alias = "delete_args")]
    pub delete_args: Option<PathArgs>,
    #[serde(default, alias = "grep_args")]
    pub grep_args: Option<GrepArgs>,
    #[serde(default, alias = "read_args")]
    pub read_args: Option<PathArgs>,
    #[serde(default, alias = "ls_args")]
    pub ls_args: Option<PathArgs>,
    #[serde(default, alias = "mcp_args")]
    pub mcp_args: Option<McpArgs>,
    /// The other arms (`diagnosticsArgs`, `fetchArgs`, …) and `spanContext`, kept.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellArgs {
    #[serde(default)]
    pub command: String,
    #[serde(default, alias = "working_directory")]
    pub working_directory: Option<String>,
    /// Milliseconds.
    #[serde(default)]
    pub timeout: Option<Int>,
}

/// `read_args`, `ls_args`, `delete_args`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PathArgs {
    #[serde(default)]
    pub path: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default, alias = "output_mode")]
    pub output_mode: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteArgs {
    #[serde(default)]
    pub path: String,
    #[serde(default, alias = "file_text")]
    pub file_text: String,
}

/// `McpArgs{name ("provider___tool"), args, tool_call_id, provider_identifier, tool_name}`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpArgs {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    #[serde(default, alias = "tool_call_id")]
    pub tool_call_id: Option<String>,
    #[serde(default, alias = "provider_identifier")]
    pub provider_identifier: Option<String>,
    #[serde(default, alias = "tool_name")]
    pub tool_name: Option<String>,
}

/// What an exec request asks for, one variant per arm the engine maps (SPEC §9.5).
#[derive(Clone, Debug, PartialEq)]
pub enum ExecRequest {
    Shell {
        command: String,
        cwd: Option<String>,
        timeout_ms: Option<i64>,
    },
    Read {
        path: String,
    },
    Ls {
        path: String,
    },
    /// `grep_args` with a pattern.
    Grep {
        pattern: String,
        path: String,
        glob: Option<String>,
    },
    /// `grep_args` with a glob and no pattern: a file search.
    Glob {
        pattern: String,
        path: String,
    },
    Write {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    Mcp {
        name: String,
        tool_name: String,
        provider: Option<String>,
        args: Map<String, Value>,
    },
    /// An arm the engine does not map (`diagnosticsArgs`, `fetchArgs`, …).
    Other {
        arm: String,
        value: Value,
    },
}

impl ExecServerMessage {
    /// The request, from whichever arm is set.
    pub fn request(&self) -> ExecRequest {
        if let Some(a) = self.shell_args.as_ref().or(self.shell_stream_args.as_ref()) {
            return ExecRequest::Shell {
                command: a.command.clone(),
                cwd: a.working_directory.clone().filter(|d| !d.is_empty()),
                timeout_ms: a.timeout.map(Int::get),
            };
        }
        if let Some(a) = &self.read_args {
            return ExecRequest::Read { path: a.path.clone() };
        }
        if let Some(a) = &self.ls_args {
            return ExecRequest::Ls { path: a.path.clone() };
        }
        if let Some(a) = &self.grep_args {
            let path = a.path.clone().unwrap_or_else(|| ".".into());
            return match (a.pattern.clone().filter(|p| !p.is_empty()), a.glob.clone()) {
                (Some(pattern), glob) => ExecRequest::Grep { pattern, path, glob },
                (None, Some(glob)) => ExecRequest::Glob { pattern: glob, path },
                (None, None) => ExecRequest::Grep { pattern: String::new(), path, glob: None },
            };
        }
        if let Some(a) = &self.write_args {
            return ExecRequest::Write { path: a.path.clone(), content: a.file_text.clone() };
        }
        if let Some(a) = &self.delete_args {
            return ExecRequest::Delete { path: a.path.clone() };
        }
        if let Some(a) = &self.mcp_args {
            let tool_name = a
                .tool_name
                .clone()
                .filter(|t| !t.is_empty())
                .or_else(|| a.name.rsplit_once("___").map(|(_, t)| t.to_owned()))
                .unwrap_or_else(|| a.name.clone());
            return ExecRequest::Mcp {
                name: a.name.clone(),
                tool_name,
                provider: a.provider_identifier.clone(),
                args: a.args.clone(),
            };
        }
        let (arm, value) = self
            .other
            .iter()
            .find(|(k, _)| k.ends_with("Args") || k.ends_with("_args"))
            .map_or_else(|| ("unknown".to_owned(), Value::Null), |(k, v)| (k.clone(), v.clone()));
        ExecRequest::Other { arm, value }
    }

    /// The key a call is known by: the exec id, else the MCP tool call id, else `exec-<id>`.
    pub fn call_key(&self) -> String {
        if let Some(e) = self.exec_id.as_deref().filter(|e| !e.is_empty()) {
            return e.to_owned();
        }
        if let Some(t) = self.mcp_args.as_ref().and_then(|m| m.tool_call_id.as_deref()).filter(|t| !t.is_empty()) {
            return t.to_owned();
        }
        format!("exec-{}", self.id.map_or(0, Int::get))
    }

    /// The numeric correlation id (0 when absent).
    pub fn numeric_id(&self) -> u32 {
        self.id.and_then(|i| u32::try_from(i.get()).ok()).unwrap_or(0)
    }
}

/// `ExecClientMessage{id, exec_id, oneof …_result}`: the client's answer to one exec request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecClientMessage {
    #[serde(default)]
    pub id: u32,
    #[serde(default, alias = "exec_id")]
    pub exec_id: String,
    #[serde(flatten)]
    pub result: ExecResult,
}

/// The result arms toolstream writes and reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExecResult {
    #[serde(alias = "shell_result")]
    ShellResult(ShellResult),
    #[serde(alias = "read_result")]
    ReadResult(Outcome<ReadSuccess>),
    #[serde(alias = "ls_result")]
    LsResult(Outcome<LsSuccess>),
    #[serde(alias = "grep_result")]
    GrepResult(Outcome<GrepSuccess>),
    #[serde(alias = "write_result")]
    WriteResult(Outcome<WriteSuccess>),
    #[serde(alias = "delete_result")]
    DeleteResult(Outcome<DeleteSuccess>),
    #[serde(alias = "mcp_result")]
    McpResult(Outcome<McpSuccess>),
}

/// `ShellResult{oneof success | failure}`: the arm is `success` iff the exit code is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ShellResult {
    Success(ShellOutcome),
    Failure(ShellOutcome),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellOutcome {
    #[serde(default)]
    pub command: String,
    #[serde(default, alias = "working_directory", skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    #[serde(default, alias = "exit_code")]
    pub exit_code: i32,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
}

/// `<Tool>Result{oneof success | error}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome<S> {
    Success(S),
    Error(ExecError),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecError {
    #[serde(default)]
    pub error: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadSuccess {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub content: String,
    #[serde(default, alias = "total_lines")]
    pub total_lines: i32,
    /// int64: a string in proto3 JSON.
    #[serde(default, alias = "file_size", with = "int64_string")]
    pub file_size: i64,
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LsSuccess {
    #[serde(default, alias = "files_string")]
    pub files_string: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepSuccess {
    #[serde(default)]
    pub pattern: String,
    #[serde(default)]
    pub path: String,
    #[serde(default, alias = "output_mode")]
    pub output_mode: String,
    #[serde(default, alias = "workspace_results")]
    pub workspace_results: BTreeMap<String, GrepUnionResult>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GrepUnionResult {
    #[serde(default)]
    pub files: GrepFilesResult,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepFilesResult {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default, alias = "total_files")]
    pub total_files: i32,
    #[serde(default, alias = "client_truncated")]
    pub client_truncated: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteSuccess {
    #[serde(default)]
    pub path: String,
    #[serde(default, alias = "lines_created")]
    pub lines_created: i32,
    #[serde(default, alias = "file_size", with = "int64_string")]
    pub file_size: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeleteSuccess {
    #[serde(default)]
    pub path: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSuccess {
    #[serde(default)]
    pub content: Vec<McpContentItem>,
    #[serde(default, alias = "is_error")]
    pub is_error: bool,
}

/// `McpToolResultContentItem{oneof text | image}`; toolstream writes text items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum McpContentItem {
    Text(McpText),
    Image(Value),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct McpText {
    #[serde(default)]
    pub text: String,
}

/// `ExecClientControlMessage{oneof stream_close | throw}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExecClientControlMessage {
    #[serde(alias = "stream_close")]
    StreamClose(StreamClose),
    Throw(Value),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamClose {
    #[serde(default)]
    pub id: u32,
}

/// proto3 JSON writes int64 as a decimal string; accept a number too.
mod int64_string {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::num::Int;

    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        Int::deserialize(d).map(Int::get)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn camel_and_snake_case_names_both_decode() {
        let camel: ExecRecordLine = serde_json::from_str(
            r#"{"execServerMessage":{"id":3,"execId":"e3","shellArgs":{"command":"ls","workingDirectory":"/w"}}}"#,
        )
        .unwrap();
        let snake: ExecRecordLine = serde_json::from_str(
            r#"{"exec_server_message":{"id":3,"exec_id":"e3","shell_args":{"command":"ls","working_directory":"/w"}}}"#,
        )
        .unwrap();
        for line in [camel, snake] {
            let m = line.exec_server_message.unwrap();
            assert_eq!(m.call_key(), "e3");
            assert_eq!(
                m.request(),
                ExecRequest::Shell { command: "ls".into(), cwd: Some("/w".into()), timeout_ms: None }
            );
        }
        let client: ExecRecordLine = serde_json::from_str(
            r#"{"exec_client_message":{"id":1,"exec_id":"e1","read_result":{"success":{"path":"a","content":"x","total_lines":1,"file_size":"1"}}}}"#,
        )
        .unwrap();
        let m = client.exec_client_message.unwrap();
        assert!(matches!(m.result, ExecResult::ReadResult(Outcome::Success(ReadSuccess { file_size: 1, .. }))));
    }

    #[test]
    fn grep_with_a_glob_and_no_pattern_is_a_file_search() {
        let m: ExecServerMessage =
            serde_json::from_str(r#"{"id":1,"grepArgs":{"glob":"**/*.rs","path":"src"}}"#).unwrap();
        assert_eq!(m.request(), ExecRequest::Glob { pattern: "**/*.rs".into(), path: "src".into() });
        assert_eq!(m.call_key(), "exec-1");
    }

    #[test]
    fn unknown_arms_are_kept() {
        let m: ExecServerMessage = serde_json::from_str(r#"{"id":2,"fetchArgs":{"url":"u"}}"#).unwrap();
        assert_eq!(m.request(), ExecRequest::Other { arm: "fetchArgs".into(), value: serde_json::json!({"url":"u"}) });
    }
}
