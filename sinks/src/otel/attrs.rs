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
pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// The canonical tool name (for MCP: the MCP tool's own name).
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// The call id's hash, as the JSONL trace shows it (never the raw id).
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// [`TOOL_TYPE_FUNCTION`] or [`TOOL_TYPE_EXTENSION`].
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// Content, only with [`CAPTURE_CONTENT_ENV`] set to `true`.
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// Set exactly on failed calls and failed or cancelled runs.
pub const ERROR_TYPE: &str = "error.type";

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
/// Metric: tokens, by [`TOKEN_TYPE`] (the GenAI `gen_ai.client.token.usage` name is a histogram
/// per operation; ours is a plain counter per run total).
pub const METRIC_TOKENS: &str = "toolstream.tokens";
/// `success` / `error` on [`METRIC_TOOL_CALLS`].
pub const OUTCOME: &str = "toolstream.outcome";
/// `gen_ai.token.type`: `input`, `output`, `cache_read`, `cache_creation`.
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
