//! The one table between exec requests and OpenAI tools (SPEC §9.5): an exec request becomes an
//! OpenAI tool call, and the client's `role:"tool"` answer becomes the `ExecClientMessage`
//! result followed by `ExecClientControlMessage.stream_close`.
//!
//! | exec arm | OpenAI tool | arguments | result back |
//! | --- | --- | --- | --- |
//! | `shell_args`, `shell_stream_args` | `bash` | `{command, cwd?}` | `shellResult.success` iff exit 0, else `.failure`, with the output |
//! | `read_args` | `read` | `{filePath}` | `readResult.success{path, content, totalLines, fileSize}` |
//! | `ls_args` | `list` | `{path}` | `lsResult.success{filesString}` |
//! | `grep_args` with a pattern | `grep` | `{pattern, path}` (+`include` when it has a glob) | `grepResult.success` (files with matches) |
//! | `grep_args` with only a glob | `glob` | `{pattern, path}` | `grepResult.success` (the files) |
//! | `write_args` | `write` | `{filePath, content}` | `writeResult.success{path, linesCreated, fileSize}` |
//! | `delete_args` | `delete` | `{filePath}` | `deleteResult.success{path}` |
//! | `mcp_args` | the original tool name | the original args | `mcpResult.success{content:[{text}]}` |
//!
//! `delete` has no common OpenAI-client counterpart (opencode has none); it is sent as its own
//! tool, `delete{filePath}`, rather than rewritten into a shell `rm` the model never asked for: a
//! client that lacks it answers with an error, which goes back as `deleteResult.error`.
//!
//! Errors: an answer whose text starts with `Error:` (how pi and opencode report a failed tool)
//! goes back in the error arm (`mcpResult.success` with `isError` for MCP). For shell, the exit
//! code is read from a JSON answer (`{"exitCode"|"exit_code", "stdout"|"output", "stderr"}`) or a
//! last line `Command exited with code N` / `exit code: N`; otherwise it is 0.
//!
//! The OpenAI tool call id is `call_<first 8 hex of sha256(exec call key)>`: stable, so a
//! recording served twice names its calls the same, and never the raw exec id.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{
    DeleteSuccess, ExecClientControlMessage, ExecClientMessage, ExecError, ExecRequest, ExecResult, ExecServerMessage,
    GrepFilesResult, GrepSuccess, GrepUnionResult, LsSuccess, McpContentItem, McpSuccess, McpText, Outcome,
    ReadSuccess, ShellOutcome, ShellResult, StreamClose, WriteSuccess,
};
use crate::ids::hash8;

/// An OpenAI `tool_calls[]` entry before it is laid out on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl OpenAiToolCall {
    /// As JSON, `{id, name, arguments}` (arguments an object), for carrying it through events.
    pub fn to_json(&self) -> Value {
        json!({ "id": self.id, "name": self.name, "arguments": self.arguments })
    }

    /// Read back what [`to_json`](Self::to_json) wrote.
    pub fn from_json(v: &Value) -> Option<OpenAiToolCall> {
        Some(OpenAiToolCall {
            id: v.get("id")?.as_str()?.to_owned(),
            name: v.get("name")?.as_str()?.to_owned(),
            arguments: v.get("arguments").cloned().unwrap_or_else(|| json!({})),
        })
    }
}

/// The OpenAI tool call id of an exec call key.
pub fn tool_call_id(call_key: &str) -> String {
    format!("call_{}", hash8(call_key))
}

/// The OpenAI tool call an exec request becomes; `None` for arms that have no mapping.
pub fn to_tool_call(msg: &ExecServerMessage) -> Option<OpenAiToolCall> {
    let (name, arguments) = match msg.request() {
        ExecRequest::Shell { command, cwd, .. } => {
            let mut a = json!({ "command": command });
            if let (Some(cwd), Some(o)) = (cwd, a.as_object_mut()) {
                o.insert("cwd".into(), cwd.into());
            }
            ("bash".to_owned(), a)
        }
        ExecRequest::Read { path } => ("read".to_owned(), json!({ "filePath": path })),
        ExecRequest::Ls { path } => ("list".to_owned(), json!({ "path": path })),
        ExecRequest::Grep { pattern, path, glob } => {
            let mut a = json!({ "pattern": pattern, "path": path });
            if let (Some(g), Some(o)) = (glob, a.as_object_mut()) {
                o.insert("include".into(), g.into());
            }
            ("grep".to_owned(), a)
        }
        ExecRequest::Glob { pattern, path } => ("glob".to_owned(), json!({ "pattern": pattern, "path": path })),
        ExecRequest::Write { path, content } => ("write".to_owned(), json!({ "filePath": path, "content": content })),
        ExecRequest::Delete { path } => ("delete".to_owned(), json!({ "filePath": path })),
        ExecRequest::Mcp { tool_name, args, .. } => (tool_name, Value::Object(args)),
        ExecRequest::Other { .. } => return None,
    };
    Some(OpenAiToolCall { id: tool_call_id(&msg.call_key()), name, arguments })
}

/// The client's answer (the text of its `role:"tool"` message) as the messages that go back to
/// the backend: the result, then `stream_close`. `None` for arms that have no mapping.
pub fn to_client_messages(
    msg: &ExecServerMessage,
    answer: &str,
) -> Option<(ExecClientMessage, ExecClientControlMessage)> {
    let failed = answer.trim_start().starts_with("Error:");
    let error = || ExecError { error: answer.trim().to_owned() };
    let result = match msg.request() {
        ExecRequest::Shell { command, cwd, .. } => {
            let out = shell_outcome(answer);
            let outcome = ShellOutcome { command, working_directory: cwd, ..out };
            ExecResult::ShellResult(if outcome.exit_code == 0 {
                ShellResult::Success(outcome)
            } else {
                ShellResult::Failure(outcome)
            })
        }
        ExecRequest::Read { path } if !failed => ExecResult::ReadResult(Outcome::Success(ReadSuccess {
            path,
            total_lines: i32::try_from(answer.lines().count()).unwrap_or(i32::MAX),
            file_size: i64::try_from(answer.len()).unwrap_or(i64::MAX),
            content: answer.to_owned(),
            truncated: false,
        })),
        ExecRequest::Read { .. } => ExecResult::ReadResult(Outcome::Error(error())),
        ExecRequest::Ls { .. } if !failed => {
            ExecResult::LsResult(Outcome::Success(LsSuccess { files_string: answer.to_owned() }))
        }
        ExecRequest::Ls { .. } => ExecResult::LsResult(Outcome::Error(error())),
        ExecRequest::Grep { pattern, path, .. } | ExecRequest::Glob { pattern, path } if !failed => {
            let files: Vec<String> =
                answer.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
            let total_files = i32::try_from(files.len()).unwrap_or(i32::MAX);
            let mut workspace_results = BTreeMap::new();
            workspace_results.insert(
                path.clone(),
                GrepUnionResult { files: GrepFilesResult { files, total_files, client_truncated: false } },
            );
            ExecResult::GrepResult(Outcome::Success(GrepSuccess {
                pattern,
                path,
                output_mode: "files_with_matches".into(),
                workspace_results,
            }))
        }
        ExecRequest::Grep { .. } | ExecRequest::Glob { .. } => ExecResult::GrepResult(Outcome::Error(error())),
        ExecRequest::Write { path, content } if !failed => ExecResult::WriteResult(Outcome::Success(WriteSuccess {
            path,
            lines_created: i32::try_from(content.lines().count()).unwrap_or(i32::MAX),
            file_size: i64::try_from(content.len()).unwrap_or(i64::MAX),
        })),
        ExecRequest::Write { .. } => ExecResult::WriteResult(Outcome::Error(error())),
        ExecRequest::Delete { path } if !failed => ExecResult::DeleteResult(Outcome::Success(DeleteSuccess { path })),
        ExecRequest::Delete { .. } => ExecResult::DeleteResult(Outcome::Error(error())),
        ExecRequest::Mcp { .. } => ExecResult::McpResult(Outcome::Success(McpSuccess {
            content: vec![McpContentItem::Text(McpText { text: answer.to_owned() })],
            is_error: failed,
        })),
        ExecRequest::Other { .. } => return None,
    };
    let id = msg.numeric_id();
    let exec_id = msg.exec_id.clone().unwrap_or_default();
    Some((ExecClientMessage { id, exec_id, result }, ExecClientControlMessage::StreamClose(StreamClose { id })))
}

/// Exit code and output of a shell answer (see the module doc).
fn shell_outcome(answer: &str) -> ShellOutcome {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(answer.trim()) {
        let text = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k)?.as_str().map(str::to_owned));
        let code = ["exitCode", "exit_code"].iter().find_map(|k| o.get(*k)?.as_i64());
        if code.is_some() || text(&["stdout", "output"]).is_some() {
            return ShellOutcome {
                exit_code: code.and_then(|c| i32::try_from(c).ok()).unwrap_or(0),
                stdout: text(&["stdout", "output"]).unwrap_or_default(),
                stderr: text(&["stderr"]).unwrap_or_default(),
                ..ShellOutcome::default()
            };
        }
    }
    let trimmed = answer.trim_end();
    let (body, last) = trimmed.rsplit_once('\n').unwrap_or(("", trimmed));
    let code = ["Command exited with code ", "exit code: ", "Exit code: "]
        .iter()
        .find_map(|p| last.trim().strip_prefix(p)?.trim().parse::<i32>().ok());
    match code {
        Some(c) => ShellOutcome { exit_code: c, stdout: body.trim_end().to_owned(), ..ShellOutcome::default() },
        None => ShellOutcome { exit_code: 0, stdout: answer.to_owned(), ..ShellOutcome::default() },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn server(json: &str) -> ExecServerMessage {
        serde_json::from_str(json).unwrap()
    }

    /// Request → (name, args); answer → the proto3-JSON of the result and the stream close.
    fn round_trip(req: &str, answer: &str) -> (String, Value, Value, Value) {
        let m = server(req);
        let call = to_tool_call(&m).unwrap();
        assert_eq!(call.id, tool_call_id(&m.call_key()));
        let (result, close) = to_client_messages(&m, answer).unwrap();
        (call.name, call.arguments, serde_json::to_value(result).unwrap(), serde_json::to_value(close).unwrap())
    }

    #[test]
    fn shell() {
        let (name, args, result, close) = round_trip(
            r#"{"id":1,"execId":"e1","shellArgs":{"command":"npm test","workingDirectory":"/w"}}"#,
            "2 failed\nCommand exited with code 1",
        );
        assert_eq!((name.as_str(), args), ("bash", json!({"command": "npm test", "cwd": "/w"})));
        assert_eq!(
            result,
            json!({"id": 1, "execId": "e1", "shellResult": {"failure": {
                "command": "npm test", "workingDirectory": "/w", "exitCode": 1, "stdout": "2 failed", "stderr": ""}}})
        );
        assert_eq!(close, json!({"streamClose": {"id": 1}}));
        let (_, args, result, _) = round_trip(
            r#"{"id":2,"execId":"e2","shell_stream_args":{"command":"ls"}}"#,
            r#"{"exitCode":0,"stdout":"a\nb","stderr":""}"#,
        );
        assert_eq!(args, json!({"command": "ls"}));
        assert_eq!(result["shellResult"]["success"]["stdout"], "a\nb");
        assert_eq!(result["shellResult"]["success"]["exitCode"], 0);
    }

    #[test]
    fn read() {
        let (name, args, result, close) =
            round_trip(r#"{"id":2,"execId":"e2","readArgs":{"path":"src/main.rs"}}"#, "fn main() {}\n");
        assert_eq!((name.as_str(), args), ("read", json!({"filePath": "src/main.rs"})));
        assert_eq!(
            result,
            json!({"id": 2, "execId": "e2", "readResult": {"success": {
                "path": "src/main.rs", "content": "fn main() {}\n", "totalLines": 1, "fileSize": "13", "truncated": false}}})
        );
        assert_eq!(close, json!({"streamClose": {"id": 2}}));
        let (_, _, result, _) = round_trip(r#"{"id":2,"readArgs":{"path":"x"}}"#, "Error: no such file");
        assert_eq!(result["readResult"], json!({"error": {"error": "Error: no such file"}}));
    }

    #[test]
    fn ls() {
        let (name, args, result, _) = round_trip(r#"{"id":3,"execId":"e3","lsArgs":{"path":"/w"}}"#, "a.rs\nb.rs");
        assert_eq!((name.as_str(), args), ("list", json!({"path": "/w"})));
        assert_eq!(result, json!({"id": 3, "execId": "e3", "lsResult": {"success": {"filesString": "a.rs\nb.rs"}}}));
    }

    #[test]
    fn grep_with_a_pattern() {
        let (name, args, result, _) =
            round_trip(r#"{"id":4,"execId":"e4","grepArgs":{"pattern":"TODO","path":"src"}}"#, "src/a.rs\nsrc/b.rs\n");
        assert_eq!((name.as_str(), args), ("grep", json!({"pattern": "TODO", "path": "src"})));
        assert_eq!(
            result,
            json!({"id": 4, "execId": "e4", "grepResult": {"success": {
                "pattern": "TODO", "path": "src", "outputMode": "files_with_matches",
                "workspaceResults": {"src": {"files": {"files": ["src/a.rs", "src/b.rs"], "totalFiles": 2, "clientTruncated": false}}}}}})
        );
    }

    #[test]
    fn grep_with_a_glob() {
        let (name, args, result, _) =
            round_trip(r#"{"id":5,"execId":"e5","grep_args":{"glob":"**/*.ts","path":"src"}}"#, "src/x.ts");
        assert_eq!((name.as_str(), args), ("glob", json!({"pattern": "**/*.ts", "path": "src"})));
        assert_eq!(result["grepResult"]["success"]["pattern"], "**/*.ts");
        assert_eq!(result["grepResult"]["success"]["workspaceResults"]["src"]["files"]["files"], json!(["src/x.ts"]));
    }

    #[test]
    fn write() {
        let (name, args, result, _) = round_trip(
            r#"{"id":6,"execId":"e6","writeArgs":{"path":"notes.md","fileText":"a\nb\n"}}"#,
            "Wrote file successfully.",
        );
        assert_eq!((name.as_str(), args), ("write", json!({"filePath": "notes.md", "content": "a\nb\n"})));
        assert_eq!(
            result,
            json!({"id": 6, "execId": "e6", "writeResult": {"success": {"path": "notes.md", "linesCreated": 2, "fileSize": "4"}}})
        );
    }

    #[test]
    fn delete() {
        let (name, args, result, _) = round_trip(r#"{"id":7,"execId":"e7","deleteArgs":{"path":"old.txt"}}"#, "ok");
        assert_eq!((name.as_str(), args), ("delete", json!({"filePath": "old.txt"})));
        assert_eq!(result, json!({"id": 7, "execId": "e7", "deleteResult": {"success": {"path": "old.txt"}}}));
        let (_, _, result, _) = round_trip(r#"{"id":7,"deleteArgs":{"path":"x"}}"#, "Error: unknown tool delete");
        assert_eq!(result["deleteResult"]["error"]["error"], "Error: unknown tool delete");
    }

    #[test]
    fn mcp() {
        let (name, args, result, close) = round_trip(
            r#"{"id":8,"execId":"e8","mcpArgs":{"name":"opencode___get_weather","args":{"location":"Tokyo"},
                "toolCallId":"tc8","providerIdentifier":"opencode","toolName":"get_weather"}}"#,
            "22°C, partly cloudy",
        );
        assert_eq!((name.as_str(), args), ("get_weather", json!({"location": "Tokyo"})));
        assert_eq!(
            result,
            json!({"id": 8, "execId": "e8", "mcpResult": {"success": {
                "content": [{"text": {"text": "22°C, partly cloudy"}}], "isError": false}}})
        );
        assert_eq!(close, json!({"streamClose": {"id": 8}}));
        // Without `toolName`, the name after the provider's `___`.
        let m = server(r#"{"id":9,"mcpArgs":{"name":"p___search","args":{}}}"#);
        assert_eq!(to_tool_call(&m).unwrap().name, "search");
    }

    #[test]
    fn unmapped_arms_have_no_tool() {
        let m = server(r#"{"id":10,"diagnosticsArgs":{"path":"a"}}"#);
        assert_eq!(to_tool_call(&m), None);
        assert_eq!(to_client_messages(&m, "x"), None);
    }
}
