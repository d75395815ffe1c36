//! The OpenTelemetry names this sink writes, in one place: the GenAI semantic-convention attribute
//! names and values (still "development" upstream, so they are our own constants rather than the
//! semconv crate's), the span and event names, and our own `toolstream.*` attributes.

/// `gen_ai.operation.name`: `invoke_agent` on a run's span, `execute_tool` on a call's.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`: always [`PROVIDER_CURSOR`].
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// The Cursor session (chat) id.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// The current name of tokens written to the cache…
pub const USAGE_CACHE_WRITE_INPUT_TOKENS: &str = "gen_ai.usage.cache_write.input_tokens";
/// …and the older one, written beside it during the conventions' transition.
pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// The canonical tool name (for MCP: the MCP tool's own name).
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// The call id's hash, as the JSONL trace shows it (never the raw id).
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// [`TOOL_TYPE_FUNCTION`] or [`TOOL_TYPE_EXTENSION`].
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// Content, only when [`CAPTURE_CONTENT_ENV`] asks for it on spans.
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// The prompt and the response (GenAI message JSON), only when [`CAPTURE_CONTENT_ENV`] asks.
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// The event that carries them in the event capture modes.
pub const EVENT_OPERATION_DETAILS: &str = "gen_ai.client.inference.operation.details";
/// Set exactly on failed calls and failed, cancelled or incomplete runs.
pub const ERROR_TYPE: &str = "error.type";
/// `error.type` of a run still open when its source (its conversation, its input) ended.
pub const ERROR_INCOMPLETE: &str = "incomplete";

/// What Cursor hooks (and transcripts) report of a run: the Cursor build…
pub const CURSOR_VERSION: &str = "cursor.version";
/// …the composer mode (`agent`, `ask`, …)…
pub const CURSOR_COMPOSER_MODE: &str = "cursor.composer_mode";
/// …and the workspace folders.
pub const CURSOR_WORKSPACE_ROOTS: &str = "cursor.workspace_roots";

pub const OP_INVOKE_AGENT: &str = "invoke_agent";
pub const OP_EXECUTE_TOOL: &str = "execute_tool";
pub const PROVIDER_CURSOR: &str = "cursor";
/// The agent toolstream reports on.
pub const AGENT_CURSOR: &str = "Cursor Agent";
/// A run span's name: `invoke_agent {gen_ai.agent.name}`.
pub const RUN_SPAN_NAME: &str = "invoke_agent Cursor Agent";
/// Cursor's own tools.
pub const TOOL_TYPE_FUNCTION: &str = "function";
/// MCP tools.
pub const TOOL_TYPE_EXTENSION: &str = "extension";
/// `error.type` of a call whose result is an error (an error arm, a non-zero exit).
pub const ERROR_TOOL: &str = "tool_error";

/// The opt-in for content attributes (arguments and results).
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// A span event per in-progress (lifecycle) line.
pub const EVENT_LIFECYCLE: &str = "toolstream.lifecycle";
pub const LIFECYCLE_TITLE: &str = "toolstream.lifecycle.title";
pub const LIFECYCLE_LABEL: &str = "toolstream.lifecycle.label";
/// A span event per line of shell progress; the line itself only with the content opt-in.
pub const EVENT_SHELL_OUTPUT: &str = "toolstream.shell.output";
pub const SHELL_STREAM: &str = "toolstream.shell.stream";
pub const SHELL_LINE: &str = "toolstream.shell.line";

/// The instrumentation scope of every span and metric.
pub const SCOPE: &str = "toolstream";
/// `service.name` unless `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` say otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "toolstream";

/// Metric: tool calls, by `gen_ai.tool.name` and [`OUTCOME`].
pub const METRIC_TOOL_CALLS: &str = "toolstream.tool.calls";
/// Metric: tool-call duration histogram, seconds.
pub const METRIC_TOOL_DURATION: &str = "toolstream.tool.duration";
/// Metric: tokens, by [`TOKEN_TYPE`], a plain counter of run totals (the GenAI histogram is
/// [`METRIC_GENAI_TOKEN_USAGE`]).
pub const METRIC_TOKENS: &str = "toolstream.tokens";
/// Metric (GenAI conventions): duration of each run (`invoke_agent`) and call (`execute_tool`),
/// seconds.
pub const METRIC_GENAI_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// Metric (GenAI conventions): a run's input and output tokens, by [`TOKEN_TYPE`].
pub const METRIC_GENAI_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// Bucket boundaries the conventions advise for [`METRIC_GENAI_OPERATION_DURATION`]…
pub const GENAI_DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// …and for [`METRIC_GENAI_TOKEN_USAGE`].
pub const GENAI_TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];
/// `success` / `error` on [`METRIC_TOOL_CALLS`].
pub const OUTCOME: &str = "toolstream.outcome";
/// `gen_ai.token.type`: `input`, `output`, `cache_read`, `cache_creation`.
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
