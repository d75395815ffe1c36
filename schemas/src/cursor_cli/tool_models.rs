//! Typed models of the args and results of the 18 Cursor tool kinds (SPEC §1.1, §4): an `XArgs`
//! struct and result-arm structs per tool, the per-kind unions [`ToolArgs`] / [`ToolSuccess`], the
//! failure union [`FailureResult`], and their parsers.
//!
//! Cursor omits fields freely and adds new ones without notice, so every field is an `Option`,
//! every integer is an [`Int`] (JSON number or decimal string), and every struct keeps the fields
//! it does not name in `extra`: an unknown field is never an error. [`Unmodeled`] lists such fields
//! at any depth (for traces, and for the fixture tests that prove every recorded field is typed).
//! Field names follow the CLI `stream-json` payloads, seed 001 and Cursor's `agent.v1` protos; the
//! same shapes read `@cursor/sdk` `ToolCall.args` and `result.value`.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::num::Int;
use crate::result_status::ResultStatus;
use crate::tools::ToolKind;

/// The fields of a JSON object that a model does not name, kept verbatim.
pub type Extra = Map<String, Value>;

// ------------------------------------------------------------------------------------------------
// Unknown-field accounting
// ------------------------------------------------------------------------------------------------

/// Lists the fields a parsed value kept in `extra` maps, at any depth.
pub trait Unmodeled {
    /// Appends the path of every unmodeled field below `path` to `out`.
    fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>);

    /// Paths such as `parsingResult.executableCommands[0].quoted`; empty when every field is typed.
    fn unmodeled_fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_unmodeled(&mut String::new(), &mut out);
        out
    }
}

macro_rules! leaf_unmodeled {
    ($($ty:ty),* $(,)?) => {$(
        impl Unmodeled for $ty {
            fn collect_unmodeled(&self, _: &mut String, _: &mut Vec<String>) {}
        }
    )*};
}

// `Value` and free-form maps are untyped on purpose (MCP args, proto oneofs kept raw).
leaf_unmodeled!(String, bool, Int, Value, Extra, TodoStatus);

impl<T: Unmodeled> Unmodeled for Option<T> {
    fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>) {
        if let Some(v) = self {
            v.collect_unmodeled(path, out);
        }
    }
}

impl<T: Unmodeled> Unmodeled for Vec<T> {
    fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>) {
        for (i, item) in self.iter().enumerate() {
            let len = path.len();
            let _ = write!(path, "[{i}]");
            item.collect_unmodeled(path, out);
            path.truncate(len);
        }
    }
}

impl<T: Unmodeled> Unmodeled for BTreeMap<String, T> {
    fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>) {
        for (key, item) in self {
            let len = path.len();
            let _ = write!(path, "[{key:?}]");
            item.collect_unmodeled(path, out);
            path.truncate(len);
        }
    }
}

/// Visits one named field: `rust_name` is the Rust identifier, reported in its wire (camelCase) form.
pub(crate) fn visit_field<T: Unmodeled>(path: &mut String, rust_name: &str, value: &T, out: &mut Vec<String>) {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    let mut upper = false;
    for c in rust_name.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            path.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            path.push(c);
        }
    }
    value.collect_unmodeled(path, out);
    path.truncate(len);
}

pub(crate) fn report_extra(path: &str, extra: &Extra, out: &mut Vec<String>) {
    out.extend(extra.keys().map(|k| if path.is_empty() { k.clone() } else { format!("{path}.{k}") }));
}

/// Declares wire models: camelCase, every field optional and omitted when `None`, unknown fields
/// kept in `extra`. `skip_serializing_if = "Option::is_none"` makes a non-`Option` field a compile
/// error, so "every field is optional" holds by construction.
macro_rules! model {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty, )*
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: $ty,
            )*
            /// Fields this model does not name, kept verbatim.
            #[serde(flatten)]
            pub extra: Extra,
        }

        impl Unmodeled for $name {
            fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>) {
                $( visit_field(path, stringify!($field), &self.$field, out); )*
                report_extra(path, &self.extra, out);
            }
        }
    )*};
}

/// The same declarations serve the other wire formats (Cursor bubbles).
pub(crate) use model;

// ------------------------------------------------------------------------------------------------
// read
// ------------------------------------------------------------------------------------------------

model! {
    /// `readToolCall.args`.
    pub struct ReadArgs {
        pub path: Option<String>,
        /// First line to read (1-based).
        pub offset: Option<Int>,
        /// Maximum number of lines.
        pub limit: Option<Int>,
        pub include_line_numbers: Option<bool>,
        pub tool_call_id: Option<String>,
    }

    /// `readToolCall.result.success`.
    pub struct ReadSuccess {
        pub content: Option<String>,
        /// Binary content (base64), instead of `content`.
        pub data: Option<String>,
        pub data_blob_id: Option<String>,
        pub content_blob_id: Option<String>,
        pub is_empty: Option<bool>,
        pub exceeded_limit: Option<bool>,
        pub total_lines: Option<Int>,
        pub file_size: Option<Int>,
        pub path: Option<String>,
        pub read_range: Option<ReadRange>,
        pub include_line_numbers: Option<bool>,
        pub related_cursor_rule_paths: Option<Vec<String>>,
        pub related_cursor_rules: Option<Vec<Value>>,
    }

    /// The lines a read returned (1-based, inclusive).
    pub struct ReadRange {
        pub start_line: Option<Int>,
        pub end_line: Option<Int>,
    }
}

// ------------------------------------------------------------------------------------------------
// grep
// ------------------------------------------------------------------------------------------------

model! {
    /// `grepToolCall.args`.
    pub struct GrepArgs {
        pub pattern: Option<String>,
        pub path: Option<String>,
        pub glob: Option<String>,
        /// `content`, `files_with_matches` or `count`.
        pub output_mode: Option<String>,
        pub context_before: Option<Int>,
        pub context_after: Option<Int>,
        pub context: Option<Int>,
        pub case_insensitive: Option<bool>,
        /// ripgrep file type filter (`rust`, `js`, …).
        pub r#type: Option<String>,
        pub head_limit: Option<Int>,
        pub multiline: Option<bool>,
        pub sort: Option<String>,
        pub sort_ascending: Option<bool>,
        pub offset: Option<Int>,
        pub sandbox_policy: Option<Value>,
        pub tool_call_id: Option<String>,
    }

    /// `grepToolCall.result.success`.
    pub struct GrepSuccess {
        pub pattern: Option<String>,
        pub path: Option<String>,
        pub output_mode: Option<String>,
        /// Results per workspace root (absolute path → result).
        pub workspace_results: Option<BTreeMap<String, GrepWorkspaceResult>>,
        pub active_editor_result: Option<GrepWorkspaceResult>,
    }

    /// One workspace root's grep result: one of `content`, `files`, `count` (CLI), or the
    /// `@cursor/sdk` form `{type: "content"|"files"|"count", output}` (SPEC §1.2).
    pub struct GrepWorkspaceResult {
        pub content: Option<GrepContentResult>,
        pub files: Option<GrepFilesResult>,
        pub count: Option<GrepCountResult>,
        pub r#type: Option<String>,
        pub output: Option<GrepOutput>,
    }

    /// The SDK's `output` of one root: the fields of whichever result `type` names.
    pub struct GrepOutput {
        pub matches: Option<Vec<GrepFileMatches>>,
        pub files: Option<Vec<String>>,
        pub counts: Option<Vec<GrepFileCount>>,
        pub total_matches: Option<Int>,
        pub total_files: Option<Int>,
        pub total_lines: Option<Int>,
        pub total_matched_lines: Option<Int>,
        pub client_truncated: Option<bool>,
        pub ripgrep_truncated: Option<bool>,
    }

    /// `outputMode: content`.
    pub struct GrepContentResult {
        pub matches: Option<Vec<GrepFileMatches>>,
        pub total_lines: Option<Int>,
        pub total_matched_lines: Option<Int>,
        pub client_truncated: Option<bool>,
        pub ripgrep_truncated: Option<bool>,
        pub head_limit_applied: Option<Int>,
        pub offset_applied: Option<Int>,
    }

    /// The matching (and context) lines of one file (CLI), or one matching line (SDK:
    /// `{file, lineNumber, line}`).
    pub struct GrepFileMatches {
        pub file: Option<String>,
        pub matches: Option<Vec<GrepLineMatch>>,
        pub line_number: Option<Int>,
        pub line: Option<String>,
    }

    pub struct GrepLineMatch {
        pub line_number: Option<Int>,
        pub content: Option<String>,
        pub content_truncated: Option<bool>,
        pub is_context_line: Option<bool>,
    }

    /// `outputMode: files_with_matches`.
    pub struct GrepFilesResult {
        pub files: Option<Vec<String>>,
        pub total_files: Option<Int>,
        pub client_truncated: Option<bool>,
        pub ripgrep_truncated: Option<bool>,
        pub head_limit_applied: Option<Int>,
        pub offset_applied: Option<Int>,
    }

    /// `outputMode: count`.
    pub struct GrepCountResult {
        pub counts: Option<Vec<GrepFileCount>>,
        pub total_files: Option<Int>,
        pub total_matches: Option<Int>,
        pub client_truncated: Option<bool>,
        pub ripgrep_truncated: Option<bool>,
        pub head_limit_applied: Option<Int>,
        pub offset_applied: Option<Int>,
    }

    pub struct GrepFileCount {
        pub file: Option<String>,
        pub count: Option<Int>,
    }
}

// ------------------------------------------------------------------------------------------------
// glob, ls
// ------------------------------------------------------------------------------------------------

model! {
    /// `globToolCall.args`.
    pub struct GlobArgs {
        pub target_directory: Option<String>,
        pub glob_pattern: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `globToolCall.result.success`.
    pub struct GlobSuccess {
        pub pattern: Option<String>,
        pub path: Option<String>,
        /// Matches, relative to `path`.
        pub files: Option<Vec<String>>,
        pub total_files: Option<Int>,
        pub client_truncated: Option<bool>,
        pub ripgrep_truncated: Option<bool>,
    }

    /// `lsToolCall.args`.
    pub struct LsArgs {
        pub path: Option<String>,
        pub ignore: Option<Vec<String>>,
        pub tool_call_id: Option<String>,
    }

    /// `lsToolCall.result.success`.
    pub struct LsSuccess {
        pub directory_tree_root: Option<LsDirectory>,
    }

    /// A directory node of an ls tree (recursive).
    pub struct LsDirectory {
        pub abs_path: Option<String>,
        pub children_dirs: Option<Vec<LsDirectory>>,
        pub children_files: Option<Vec<LsFile>>,
        pub children_were_processed: Option<bool>,
        /// Extension (`.ts`) → number of files in the whole subtree.
        pub full_subtree_extension_counts: Option<BTreeMap<String, Int>>,
        pub num_files: Option<Int>,
    }

    pub struct LsFile {
        pub name: Option<String>,
    }
}

// ------------------------------------------------------------------------------------------------
// shell
// ------------------------------------------------------------------------------------------------

model! {
    /// `shellToolCall.args`.
    pub struct ShellArgs {
        pub command: Option<String>,
        pub working_directory: Option<String>,
        /// Milliseconds.
        pub timeout: Option<Int>,
        pub hard_timeout: Option<Int>,
        /// `TIMEOUT_BEHAVIOR_BACKGROUND`, `TIMEOUT_BEHAVIOR_CANCEL`, …
        pub timeout_behavior: Option<String>,
        pub tool_call_id: Option<String>,
        pub simple_commands: Option<Vec<String>>,
        pub has_input_redirect: Option<bool>,
        pub has_output_redirect: Option<bool>,
        pub parsing_result: Option<ShellParsingResult>,
        pub requested_sandbox_policy: Option<Value>,
        pub file_output_threshold_bytes: Option<Int>,
        pub is_background: Option<bool>,
        pub skip_approval: Option<bool>,
        pub description: Option<String>,
        pub classifier_result: Option<Value>,
        pub close_stdin: Option<bool>,
        pub output_notification: Option<Value>,
        pub smart_mode_approval: Option<Value>,
        pub hook_approval_requirement: Option<Value>,
        pub conversation_id: Option<String>,
        pub admin_command_denylist: Option<Vec<String>>,
        pub request_id: Option<String>,
        pub secret_scope_id: Option<String>,
    }

    /// Cursor's parse of the command line.
    pub struct ShellParsingResult {
        pub parsing_failed: Option<bool>,
        pub executable_commands: Option<Vec<ShellExecutableCommand>>,
        pub has_redirects: Option<bool>,
        pub has_command_substitution: Option<bool>,
        pub all_redirects_are_dev_null: Option<bool>,
        pub redirects: Option<Vec<ShellRedirect>>,
    }

    pub struct ShellExecutableCommand {
        pub name: Option<String>,
        pub args: Option<Vec<ShellCommandArg>>,
        pub full_text: Option<String>,
    }

    pub struct ShellCommandArg {
        /// `word`, `string`, `raw_string`, `number`, …
        pub r#type: Option<String>,
        pub value: Option<String>,
    }

    pub struct ShellRedirect {
        pub operator: Option<String>,
        pub destination_fds: Option<Vec<Int>>,
        pub target_node_type: Option<String>,
        pub target_text: Option<String>,
    }

    /// `shellToolCall.result.success` (the command ran; `exitCode` may still be non-zero).
    pub struct ShellSuccess {
        pub command: Option<String>,
        pub working_directory: Option<String>,
        pub exit_code: Option<Int>,
        pub signal: Option<String>,
        pub stdout: Option<String>,
        pub stderr: Option<String>,
        /// Milliseconds.
        pub execution_time: Option<Int>,
        pub local_execution_time_ms: Option<Int>,
        pub interleaved_output: Option<String>,
        pub output_location: Option<Value>,
        pub output_head: Option<String>,
        pub output_tail: Option<String>,
        pub elided_chars: Option<Int>,
        /// Background shells: the terminal id (`awaitToolCall.args.taskId`) and process id.
        pub shell_id: Option<Int>,
        pub pid: Option<Int>,
        pub ms_to_wait: Option<Int>,
        /// `SHELL_BACKGROUND_REASON_USER_REQUEST`, `…_TIMEOUT`.
        pub background_reason: Option<String>,
    }

    /// `shellToolCall.result.failure`: the command exited non-zero or was aborted.
    pub struct ShellFailure {
        pub command: Option<String>,
        pub working_directory: Option<String>,
        pub exit_code: Option<Int>,
        pub signal: Option<String>,
        pub stdout: Option<String>,
        pub stderr: Option<String>,
        pub execution_time: Option<Int>,
        pub local_execution_time_ms: Option<Int>,
        pub interleaved_output: Option<String>,
        pub output_location: Option<Value>,
        pub output_head: Option<String>,
        pub output_tail: Option<String>,
        pub elided_chars: Option<Int>,
        pub aborted: Option<bool>,
        pub abort_reason: Option<String>,
    }
}

// ------------------------------------------------------------------------------------------------
// edit, write, delete
// ------------------------------------------------------------------------------------------------

model! {
    /// `editToolCall.args`. Modern builds send the whole new file as `streamContent` (also for
    /// writes of new files).
    pub struct EditArgs {
        pub path: Option<String>,
        pub stream_content: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `editToolCall.result.success`. `beforeFullFileContent` is absent for a new file.
    pub struct EditSuccess {
        pub path: Option<String>,
        pub lines_added: Option<Int>,
        pub lines_removed: Option<Int>,
        pub diff_string: Option<String>,
        pub before_full_file_content: Option<String>,
        pub after_full_file_content: Option<String>,
        pub message: Option<String>,
    }

    /// `writeToolCall.args`. No capture has one; fields from Cursor's `WriteArgs` and the names
    /// SPEC §4 accepts for recorded content.
    pub struct WriteArgs {
        pub path: Option<String>,
        pub file_text: Option<String>,
        pub contents: Option<String>,
        pub content: Option<String>,
        pub file_content: Option<String>,
        pub stream_content: Option<String>,
        /// Binary content (base64).
        pub file_bytes: Option<String>,
        pub encoding_hint: Option<String>,
        pub return_file_content_after_write: Option<bool>,
        pub tool_call_id: Option<String>,
    }

    /// `writeToolCall.result.success`.
    pub struct WriteSuccess {
        pub path: Option<String>,
        pub lines_created: Option<Int>,
        pub file_size: Option<Int>,
        pub file_content_after_write: Option<String>,
        pub message: Option<String>,
    }

    /// `deleteToolCall.args`.
    pub struct DeleteArgs {
        pub path: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `deleteToolCall.result.success`.
    pub struct DeleteSuccess {
        pub path: Option<String>,
        pub deleted_file: Option<String>,
        pub file_size: Option<Int>,
        pub prev_content: Option<String>,
        pub message: Option<String>,
    }
}

// ------------------------------------------------------------------------------------------------
// readLints
// ------------------------------------------------------------------------------------------------

model! {
    /// `readLintsToolCall.args`.
    pub struct ReadLintsArgs {
        pub paths: Option<Vec<String>>,
        pub tool_call_id: Option<String>,
    }

    /// `readLintsToolCall.result.success`.
    pub struct ReadLintsSuccess {
        pub file_diagnostics: Option<Vec<FileDiagnostics>>,
        pub total_files: Option<Int>,
        pub total_diagnostics: Option<Int>,
    }

    pub struct FileDiagnostics {
        pub path: Option<String>,
        pub diagnostics: Option<Vec<Diagnostic>>,
        pub diagnostics_count: Option<Int>,
    }

    pub struct Diagnostic {
        /// `DIAGNOSTIC_SEVERITY_ERROR`, `…_WARNING`, …
        pub severity: Option<String>,
        pub range: Option<DiagnosticRange>,
        pub message: Option<String>,
        pub source: Option<String>,
        pub code: Option<String>,
        pub is_stale: Option<bool>,
    }

    pub struct DiagnosticRange {
        pub start: Option<Position>,
        pub end: Option<Position>,
    }

    pub struct Position {
        pub line: Option<Int>,
        pub column: Option<Int>,
    }
}

// ------------------------------------------------------------------------------------------------
// updateTodos, createPlan
// ------------------------------------------------------------------------------------------------

model! {
    /// `updateTodosToolCall.args`.
    pub struct UpdateTodosArgs {
        pub todos: Option<Vec<TodoItem>>,
        /// `false` replaces the list.
        pub merge: Option<bool>,
        pub tool_call_id: Option<String>,
    }

    /// `updateTodosToolCall.result.success`.
    pub struct UpdateTodosSuccess {
        pub todos: Option<Vec<TodoItem>>,
        pub total_count: Option<Int>,
        pub was_merge: Option<bool>,
    }

    pub struct TodoItem {
        pub id: Option<String>,
        pub content: Option<String>,
        pub status: Option<TodoStatus>,
        /// Milliseconds since the epoch.
        pub created_at: Option<Int>,
        pub updated_at: Option<Int>,
        /// Ids of the todos this one waits for.
        pub dependencies: Option<Vec<String>>,
    }

    /// `createPlanToolCall.args`.
    pub struct CreatePlanArgs {
        pub name: Option<String>,
        pub overview: Option<String>,
        /// The plan text (markdown).
        pub plan: Option<String>,
        pub todos: Option<Vec<TodoItem>>,
        pub phases: Option<Vec<PlanPhase>>,
        pub is_project: Option<bool>,
        pub tool_call_id: Option<String>,
    }

    pub struct PlanPhase {
        pub name: Option<String>,
        pub todos: Option<Vec<TodoItem>>,
    }

    /// `createPlanToolCall.result.success` (empty in current builds; `planUri` is usually a
    /// sibling of the arm).
    pub struct CreatePlanSuccess {
        pub plan_uri: Option<String>,
        pub message: Option<String>,
    }
}

/// A todo's status. Wire form `TODO_STATUS_IN_PROGRESS`; `in_progress` / `inProgress` (SDK) are
/// accepted too, and anything else is kept as [`TodoStatus::Other`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TodoStatus {
    Unspecified,
    Pending,
    InProgress,
    Completed,
    Cancelled,
    Other(String),
}

impl TodoStatus {
    /// Parses any spelling; never fails.
    pub fn from_wire(s: &str) -> TodoStatus {
        let t = s.trim();
        let rest = match t.get(..12) {
            Some(p) if p.eq_ignore_ascii_case("TODO_STATUS_") => &t[12..],
            _ => t,
        };
        let norm: String =
            rest.chars().filter(|c| !matches!(c, '_' | '-' | ' ')).map(|c| c.to_ascii_lowercase()).collect();
        match norm.as_str() {
            "unspecified" => TodoStatus::Unspecified,
            "pending" => TodoStatus::Pending,
            "inprogress" => TodoStatus::InProgress,
            "completed" => TodoStatus::Completed,
            "cancelled" | "canceled" => TodoStatus::Cancelled,
            _ => TodoStatus::Other(s.to_owned()),
        }
    }

    /// The CLI wire form (`TODO_STATUS_PENDING`), or the original text of an unknown status.
    pub fn as_wire(&self) -> &str {
        match self {
            TodoStatus::Unspecified => "TODO_STATUS_UNSPECIFIED",
            TodoStatus::Pending => "TODO_STATUS_PENDING",
            TodoStatus::InProgress => "TODO_STATUS_IN_PROGRESS",
            TodoStatus::Completed => "TODO_STATUS_COMPLETED",
            TodoStatus::Cancelled => "TODO_STATUS_CANCELLED",
            TodoStatus::Other(s) => s,
        }
    }
}

impl Serialize for TodoStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_wire())
    }
}

struct TodoStatusVisitor;

impl Visitor<'_> for TodoStatusVisitor {
    type Value = TodoStatus;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a todo status as a string or an enum number")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<TodoStatus, E> {
        Ok(TodoStatus::from_wire(v))
    }

    // Proto enum numbers are not documented: keep them verbatim rather than guess.
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<TodoStatus, E> {
        Ok(TodoStatus::Other(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<TodoStatus, E> {
        Ok(TodoStatus::Other(v.to_string()))
    }
}

impl<'de> Deserialize<'de> for TodoStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TodoStatusVisitor)
    }
}

// ------------------------------------------------------------------------------------------------
// task
// ------------------------------------------------------------------------------------------------

model! {
    /// `taskToolCall.args` (a subagent).
    pub struct TaskArgs {
        pub description: Option<String>,
        pub prompt: Option<String>,
        /// A proto oneof such as `{"unspecified":{}}`, kept raw.
        pub subagent_type: Option<Value>,
        pub model: Option<String>,
        pub resume: Option<String>,
        pub agent_id: Option<String>,
        pub attachments: Option<Vec<String>>,
        /// `TASK_MODE_UNSPECIFIED`, …
        pub mode: Option<String>,
        pub responding_to_message_ids: Option<Vec<String>>,
        /// `SUBAGENT_EXECUTION_ENVIRONMENT_UNSPECIFIED`, …
        pub environment: Option<String>,
        /// A proto oneof such as `{"sameMachine":{}}`, kept raw.
        pub machine: Option<Value>,
        pub tool_call_id: Option<String>,
    }

    /// `taskToolCall.result.success`; the SDK's `result.value` is `{description, result}`.
    pub struct TaskSuccess {
        pub conversation_steps: Option<Vec<TaskStep>>,
        pub agent_id: Option<String>,
        pub is_background: Option<bool>,
        pub duration_ms: Option<Int>,
        pub result_suffix: Option<String>,
        /// `SUBAGENT_BACKGROUND_REASON_UNSPECIFIED`, …
        pub background_reason: Option<String>,
        pub transcript_path: Option<String>,
        /// SDK form: the subagent's final text, or its nested tool result
        /// (`{success: {command?, stdout?, interleavedOutput?}}`), kept raw.
        pub result: Option<Value>,
        /// SDK form: the task description echoed back.
        pub description: Option<String>,
    }

    /// One step of a subagent conversation, a oneof keyed by the step kind.
    pub struct TaskStep {
        pub assistant_message: Option<StepText>,
        pub thinking_message: Option<StepText>,
        /// A nested CLI tool call (`{"<x>ToolCall": {args, result}}`), kept raw.
        pub tool_call: Option<Value>,
    }

    /// The text of an assistant or thinking step.
    pub struct StepText {
        pub text: Option<String>,
        pub thinking_duration_ms: Option<Int>,
    }
}

// ------------------------------------------------------------------------------------------------
// generateImage, recordScreen
// ------------------------------------------------------------------------------------------------

model! {
    /// `generateImageToolCall.args`.
    pub struct GenerateImageArgs {
        /// What to draw (Cursor's field); `prompt` is accepted as the common alternative.
        pub description: Option<String>,
        pub prompt: Option<String>,
        /// Where to save the image.
        pub file_path: Option<String>,
        pub reference_image_paths: Option<Vec<String>>,
        pub aspect_ratio: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `generateImageToolCall.result.success`.
    pub struct GenerateImageSuccess {
        pub file_path: Option<String>,
        /// Base64 image data.
        pub image_data: Option<String>,
    }

    /// `recordScreenToolCall.args`.
    pub struct RecordScreenArgs {
        /// `RECORDING_MODE_START_RECORDING`, `…_SAVE_RECORDING`, `…_DISCARD_RECORDING`.
        pub mode: Option<String>,
        pub save_as_filename: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// The success arms of `recordScreenToolCall.result`: `startSuccess`, `saveSuccess` and
    /// `discardSuccess` (see [`is_success_arm`]), merged.
    pub struct RecordScreenSuccess {
        pub was_prior_recording_cancelled: Option<bool>,
        pub was_save_as_filename_ignored: Option<bool>,
        /// `saveSuccess`: the saved recording.
        pub path: Option<String>,
        pub recording_duration_ms: Option<Int>,
        pub requested_file_path_rejected_reason: Option<String>,
    }
}

// ------------------------------------------------------------------------------------------------
// mcp, semSearch, webSearch, webFetch
// ------------------------------------------------------------------------------------------------

model! {
    /// `mcpToolCall.args`.
    pub struct McpArgs {
        /// `<server>-<tool>`.
        pub name: Option<String>,
        /// The MCP tool's own arguments, free-form.
        pub args: Option<Value>,
        pub tool_name: Option<String>,
        pub provider_identifier: Option<String>,
        pub server_identifier: Option<String>,
        pub smart_mode_approval: Option<Value>,
        pub smart_mode_approval_only: Option<bool>,
        pub skip_approval: Option<bool>,
        pub tool_call_id: Option<String>,
    }

    /// `mcpToolCall.result.success`.
    pub struct McpSuccess {
        pub content: Option<Vec<McpContent>>,
        pub is_error: Option<bool>,
        pub system_reminders: Option<Vec<Value>>,
    }

    /// One MCP content block: one of `text`, `image`, `resource`.
    pub struct McpContent {
        pub text: Option<McpText>,
        pub image: Option<McpImage>,
        pub resource: Option<McpResource>,
    }

    pub struct McpText {
        pub text: Option<String>,
    }

    pub struct McpImage {
        /// Base64.
        pub data: Option<String>,
        pub mime_type: Option<String>,
    }

    pub struct McpResource {
        pub uri: Option<String>,
        pub text: Option<String>,
        pub mime_type: Option<String>,
    }

    /// `semSearchToolCall.args`.
    pub struct SemSearchArgs {
        pub query: Option<String>,
        /// Empty means the whole workspace.
        pub target_directories: Option<Vec<String>>,
        pub explanation: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `semSearchToolCall.result.success`.
    pub struct SemSearchSuccess {
        /// `<search_result path=… startLine=… endLine=…>…</search_result>` blocks.
        pub results: Option<String>,
    }

    /// `webSearchToolCall.args`.
    pub struct WebSearchArgs {
        /// Cursor's field; `query` is accepted as the common alternative.
        pub search_term: Option<String>,
        pub query: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `webSearchToolCall.result.success`.
    pub struct WebSearchSuccess {
        pub references: Option<Vec<WebSearchReference>>,
    }

    pub struct WebSearchReference {
        pub title: Option<String>,
        pub url: Option<String>,
        /// The relevant excerpt.
        pub chunk: Option<String>,
    }

    /// `webFetchToolCall.args`.
    pub struct WebFetchArgs {
        pub url: Option<String>,
        pub tool_call_id: Option<String>,
    }

    /// `webFetchToolCall.result.success`.
    pub struct WebFetchSuccess {
        pub url: Option<String>,
        pub markdown: Option<String>,
        pub output_location: Option<Value>,
    }
}

// ------------------------------------------------------------------------------------------------
// Non-success arms
// ------------------------------------------------------------------------------------------------

model! {
    /// A generic `error` arm (`readToolCall.result.error`, `deleteToolCall.result.error`, …).
    pub struct ErrorResult {
        pub error_message: Option<String>,
        pub error: Option<String>,
        pub message: Option<String>,
        pub path: Option<String>,
        pub url: Option<String>,
    }

    /// A `rejected` arm: a hook or a missing `--force` refused the call (`reason` may be empty).
    pub struct RejectedResult {
        pub command: Option<String>,
        pub working_directory: Option<String>,
        pub reason: Option<String>,
        pub is_readonly: Option<bool>,
        pub path: Option<String>,
    }

    /// Every field seen in any non-success arm (`failure`, `rejected`, `error`, `timeout`,
    /// `spawnError`, `permissionDenied`, `fileNotFound`, …), so one parser reads them all.
    pub struct FailureResult {
        pub error_message: Option<String>,
        pub error: Option<String>,
        pub message: Option<String>,
        pub reason: Option<String>,
        pub is_readonly: Option<bool>,
        pub command: Option<String>,
        pub working_directory: Option<String>,
        pub exit_code: Option<Int>,
        pub signal: Option<String>,
        pub stdout: Option<String>,
        pub stderr: Option<String>,
        pub interleaved_output: Option<String>,
        pub execution_time: Option<Int>,
        pub local_execution_time_ms: Option<Int>,
        pub output_location: Option<Value>,
        pub output_head: Option<String>,
        pub output_tail: Option<String>,
        pub elided_chars: Option<Int>,
        pub aborted: Option<bool>,
        pub abort_reason: Option<String>,
        pub timeout_ms: Option<Int>,
        pub path: Option<String>,
        pub directory: Option<String>,
        pub operation: Option<String>,
        pub url: Option<String>,
    }
}

impl FailureResult {
    /// The most specific non-blank explanation: `errorMessage`, `error`, `reason`, `message`, then
    /// `stderr`.
    pub fn error_text(&self) -> Option<&str> {
        [&self.error_message, &self.error, &self.reason, &self.message, &self.stderr]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .find(|s| !s.trim().is_empty())
    }
}

/// Keys that may sit next to the oneof arm inside `result` (`result.isBackground`,
/// `result.terminalsFolder` on shell, `result.planUri` on createPlan, …): metadata, not an arm.
pub const RESULT_SIBLING_KEYS: &[&str] = &["isBackground", "terminalsFolder", "pid", "sandboxPolicy", "planUri"];

/// Whether a `result` arm reports success (declared beside [`crate::result_status::ResultStatus`]).
pub use crate::result_status::is_success_arm;

// ------------------------------------------------------------------------------------------------
// Per-kind unions and parsers
// ------------------------------------------------------------------------------------------------

/// Parses a JSON object; `null` gives the empty model.
fn parse_object<T: DeserializeOwned + Default>(raw: &str) -> Result<T, serde_json::Error> {
    Ok(serde_json::from_str::<Option<T>>(raw)?.unwrap_or_default())
}

/// Reads a JSON object from a tree; `null` gives the empty model.
fn object_from_tree<T: DeserializeOwned + Default>(tree: &Value) -> Result<T, serde_json::Error> {
    Ok(Option::<T>::deserialize(tree)?.unwrap_or_default())
}

/// Declares an enum with one variant per [`ToolKind`] (same names), serialized as its payload.
macro_rules! per_kind {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $($variant:ident($ty:ty),)* }
    ) => {
        $(#[$meta])*
        // One value per tool call, usually short-lived: boxing every variant would only add an
        // allocation per parse.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum $name {
            $($variant($ty),)*
        }

        impl $name {
            /// Parses `raw` as the payload of `kind`.
            fn parse(kind: ToolKind, raw: &str) -> Result<Self, serde_json::Error> {
                Ok(match kind {
                    $(ToolKind::$variant => $name::$variant(parse_object(raw)?),)*
                })
            }

            /// Reads a tree as the payload of `kind`.
            fn from_tree(kind: ToolKind, tree: &Value) -> Result<Self, serde_json::Error> {
                Ok(match kind {
                    $(ToolKind::$variant => $name::$variant(object_from_tree(tree)?),)*
                })
            }

            /// The tool kind of this payload.
            pub fn kind(&self) -> ToolKind {
                match self {
                    $($name::$variant(_) => ToolKind::$variant,)*
                }
            }

            /// The payload's unknown top-level fields.
            pub fn extra(&self) -> &Extra {
                match self {
                    $($name::$variant(v) => &v.extra,)*
                }
            }
        }

        impl Unmodeled for $name {
            fn collect_unmodeled(&self, path: &mut String, out: &mut Vec<String>) {
                match self {
                    $($name::$variant(v) => v.collect_unmodeled(path, out),)*
                }
            }
        }
    };
}

per_kind! {
    /// The typed `args` of a call, one variant per tool kind.
    pub enum ToolArgs {
        Read(ReadArgs),
        Grep(GrepArgs),
        Glob(GlobArgs),
        Ls(LsArgs),
        Shell(ShellArgs),
        Edit(EditArgs),
        Write(WriteArgs),
        Delete(DeleteArgs),
        ReadLints(ReadLintsArgs),
        UpdateTodos(UpdateTodosArgs),
        CreatePlan(CreatePlanArgs),
        Task(TaskArgs),
        GenerateImage(GenerateImageArgs),
        Mcp(McpArgs),
        SemSearch(SemSearchArgs),
        RecordScreen(RecordScreenArgs),
        WebSearch(WebSearchArgs),
        WebFetch(WebFetchArgs),
    }
}

per_kind! {
    /// The typed inner object of a success arm, one variant per tool kind.
    pub enum ToolSuccess {
        Read(ReadSuccess),
        Grep(GrepSuccess),
        Glob(GlobSuccess),
        Ls(LsSuccess),
        Shell(ShellSuccess),
        Edit(EditSuccess),
        Write(WriteSuccess),
        Delete(DeleteSuccess),
        ReadLints(ReadLintsSuccess),
        UpdateTodos(UpdateTodosSuccess),
        CreatePlan(CreatePlanSuccess),
        Task(TaskSuccess),
        GenerateImage(GenerateImageSuccess),
        Mcp(McpSuccess),
        SemSearch(SemSearchSuccess),
        RecordScreen(RecordScreenSuccess),
        WebSearch(WebSearchSuccess),
        WebFetch(WebFetchSuccess),
    }
}

/// Parses the JSON text of `<x>ToolCall.args` (or SDK `ToolCall.args`) for `kind`.
/// Errors only on malformed JSON or a field of the wrong JSON type, never on missing or unknown
/// fields; `null` gives empty args.
pub fn parse_args(kind: ToolKind, raw: &str) -> Result<ToolArgs, serde_json::Error> {
    ToolArgs::parse(kind, raw)
}

/// Parses the JSON text of the inner object of a success arm (`result.success`, see
/// [`is_success_arm`]; SDK `result.value`) for `kind`.
pub fn parse_success(kind: ToolKind, raw: &str) -> Result<ToolSuccess, serde_json::Error> {
    ToolSuccess::parse(kind, raw)
}

/// Parses the JSON text of the inner object of any non-success arm.
pub fn parse_failure(raw: &str) -> Result<FailureResult, serde_json::Error> {
    parse_object(raw)
}

/// Reads `kind`'s args from a tree (as [`parse_args`] reads them from text).
pub fn args_from_tree(kind: ToolKind, tree: &Value) -> Result<ToolArgs, serde_json::Error> {
    ToolArgs::from_tree(kind, tree)
}

/// A tool result's inner object read as its tool's model: the success arm's, or the failure
/// model of every other arm.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultModel {
    Success(ToolSuccess),
    Failure(FailureResult),
    /// Not readable as the model (a field of another JSON type): shown raw instead.
    Unreadable,
}

impl ResultModel {
    /// Reads the JSON text of an inner object whose arm has `status`.
    pub fn parse(kind: ToolKind, status: &ResultStatus, text: &str) -> ResultModel {
        let model = if status.is_success() {
            parse_success(kind, text).map(ResultModel::Success)
        } else {
            parse_failure(text).map(ResultModel::Failure)
        };
        model.unwrap_or(ResultModel::Unreadable)
    }

    /// Reads an inner object already read as a tree.
    pub fn from_tree(kind: ToolKind, status: &ResultStatus, tree: &Value) -> ResultModel {
        let model = if status.is_success() {
            ToolSuccess::from_tree(kind, tree).map(ResultModel::Success)
        } else {
            object_from_tree(tree).map(ResultModel::Failure)
        };
        model.unwrap_or(ResultModel::Unreadable)
    }

    /// A shell's stdout replaced (output attributed from deltas, SPEC §6b).
    pub fn set_stdout(&mut self, stdout: &str) {
        if let ResultModel::Success(ToolSuccess::Shell(s)) = self {
            s.stdout = Some(stdout.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_arrive_as_strings_or_numbers() {
        let ToolSuccess::Delete(d) = parse_success(ToolKind::Delete, r#"{"fileSize":"2","path":"a"}"#).unwrap() else {
            panic!("wrong kind");
        };
        assert_eq!(d.file_size, Some(Int(2)));
        let ToolSuccess::Read(r) = parse_success(ToolKind::Read, r#"{"fileSize":3,"totalLines":"2"}"#).unwrap() else {
            panic!("wrong kind");
        };
        assert_eq!((r.file_size, r.total_lines), (Some(Int(3)), Some(Int(2))));
    }

    #[test]
    fn unknown_fields_land_in_extra_at_any_depth() {
        let raw = r#"{"command":"ls","future":1,"parsingResult":{"executableCommands":[{"name":"ls","quoted":true}]}}"#;
        let ToolArgs::Shell(a) = parse_args(ToolKind::Shell, raw).unwrap() else { panic!("wrong kind") };
        assert_eq!(a.extra.get("future"), Some(&Value::from(1)));
        assert_eq!(a.unmodeled_fields(), vec!["parsingResult.executableCommands[0].quoted", "future"]);
        // Kept fields serialize back.
        let back = serde_json::to_value(ToolArgs::Shell(a)).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(raw).unwrap());
    }

    #[test]
    fn missing_fields_and_null_are_fine() {
        for kind in ToolKind::all() {
            assert_eq!(parse_args(kind, "{}").unwrap().kind(), kind);
            assert_eq!(parse_args(kind, "null").unwrap().kind(), kind);
            assert_eq!(parse_success(kind, "{}").unwrap().kind(), kind);
        }
        assert_eq!(parse_failure("{}").unwrap(), FailureResult::default());
    }

    #[test]
    fn wrong_json_types_are_errors() {
        assert!(parse_args(ToolKind::Read, r#"{"path":5}"#).is_err());
        assert!(parse_args(ToolKind::Read, "[").is_err());
        assert!(parse_failure("[]").is_err());
    }

    #[test]
    fn todo_status_spellings() {
        for (s, want) in [
            ("TODO_STATUS_IN_PROGRESS", TodoStatus::InProgress),
            ("in_progress", TodoStatus::InProgress),
            ("inProgress", TodoStatus::InProgress),
            ("TODO_STATUS_PENDING", TodoStatus::Pending),
            ("completed", TodoStatus::Completed),
            ("canceled", TodoStatus::Cancelled),
            ("TODO_STATUS_BLOCKED", TodoStatus::Other("TODO_STATUS_BLOCKED".into())),
        ] {
            assert_eq!(TodoStatus::from_wire(s), want, "{s}");
        }
        let item: TodoItem = serde_json::from_str(r#"{"status":2,"createdAt":"1769942817550"}"#).unwrap();
        assert_eq!(item.status, Some(TodoStatus::Other("2".into())));
        assert_eq!(item.created_at, Some(Int(1_769_942_817_550)));
        assert_eq!(serde_json::to_string(&TodoStatus::InProgress).unwrap(), r#""TODO_STATUS_IN_PROGRESS""#);
    }

    #[test]
    fn failure_text_prefers_the_specific_message() {
        let f = parse_failure(r#"{"reason":"","errorMessage":"File not found","stderr":"x"}"#).unwrap();
        assert_eq!(f.error_text(), Some("File not found"));
        let f = parse_failure(r#"{"command":"false","exitCode":1,"stderr":"boom","aborted":false}"#).unwrap();
        assert_eq!((f.exit_code, f.error_text()), (Some(Int(1)), Some("boom")));
        assert_eq!(parse_failure(r#"{"reason":""}"#).unwrap().error_text(), None);
    }

    #[test]
    fn success_arms() {
        for arm in ["success", "startSuccess", "saveSuccess", "discardSuccess", "complete"] {
            assert!(is_success_arm(arm), "{arm}");
        }
        for arm in ["failure", "rejected", "error", "timeout", "spawnError", "permissionDenied", "isBackground"] {
            assert!(!is_success_arm(arm), "{arm}");
        }
    }
}
