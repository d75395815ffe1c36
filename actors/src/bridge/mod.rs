//! The pi tool bridge request queue (SPEC §7): MCP `tools/call` requests waiting for a pi tool
//! result — held until a run attaches, dispatched as pi tool calls, resolved by pi results, rejected
//! on deadline, MCP cancellation, run cancel or dispose.
//!
//! [`BridgeQueue`] is the pure core (no clock, no runtime: every method takes `now_ms`);
//! [`BridgeQueueActor`] is the thin actix actor around it, also holding each run's exposed tools
//! ([`exposure`]: which pi tools Cursor sees, under which MCP names). The MCP HTTP endpoint lives
//! in the engine (`hosts/src/bridge_server`).

mod actor;
mod content;
pub mod exposure;
pub mod messages;
mod queue;

pub use actor::{BridgeQueueActor, UnknownTool};
pub use content::normalize_content;
pub use queue::{BridgeQueue, PendingCall, DISPOSED_MEMORY};

use serde_json::{Map, Value};

/// Default per-call deadline (SPEC §7): one hour.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 3_600_000;

/// Settings of the bridge queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeQueueConfig {
    /// Per-call deadline, counted from when the call was queued.
    pub call_timeout_ms: u64,
}

impl Default for BridgeQueueConfig {
    fn default() -> Self {
        BridgeQueueConfig { call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS }
    }
}

/// A Cursor run that can execute bridged pi tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKey {
    pub run_id: String,
    /// Used in the pi call ids of this run (`cursor-pi-bridge-run-<uuid>-tool-<n>`).
    pub uuid: String,
}

/// One MCP `tools/call` for a pi tool, as the endpoint queues it.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeRequest {
    /// The endpoint's own id for this call (unique while pending).
    pub bridge_call_id: String,
    /// The MCP JSON-RPC request id (unique while pending; never printed raw).
    pub mcp_request_id: String,
    /// The real pi tool name.
    pub pi_tool: String,
    /// The exposed MCP name (`pi__…`).
    pub mcp_tool: String,
    pub args: Value,
    /// The run this call is for; `None` = the newest live run.
    pub run: Option<String>,
}

/// A pi `toolResult` for a bridged call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BridgeToolResult {
    /// pi content blocks (`{type:"text",text}`, `{type:"image",data,mimeType}`, anything else).
    pub content: Vec<Value>,
    pub is_error: bool,
}

/// Why a pending call was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectKind {
    /// Its deadline passed.
    Timeout,
    /// The MCP client cancelled the request.
    Aborted,
    /// Its run was cancelled.
    Cancelled,
    /// Its run was disposed (the endpoint answers 410).
    Disposed,
    /// Its bridge call id or MCP request id is already pending (the new request is rejected; the
    /// pending one is untouched).
    Duplicate,
}

impl RejectKind {
    /// The `rejectionKind` diagnostic value.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectKind::Timeout => "timeout",
            RejectKind::Aborted => "aborted",
            RejectKind::Cancelled => "cancelled",
            RejectKind::Disposed => "disposed",
            RejectKind::Duplicate => "duplicate",
        }
    }
}

/// What the queue asks the rest of the engine to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeOut {
    /// The run emits this as a pi `toolCall` (stop reason `toolUse`).
    Dispatch { run_id: String, pi_call_id: String, pi_tool: String, args: Value },
    /// Answer the MCP call with this result.
    Resolve { mcp_request_id: String, content: Vec<Value>, is_error: bool },
    /// Answer the MCP call with an error.
    Reject { mcp_request_id: String, kind: RejectKind, message: String },
    /// Abort pi's running execution of this tool call.
    AbortPiExecution { pi_call_id: String },
    /// A bridge diagnostic (SPEC §7): allowlisted fields only; the MCP id hashed.
    Diagnostic { event: &'static str, fields: Map<String, Value> },
}

/// Why a pi result was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// No pending call has this id: unknown, already resolved, timed out, cancelled, or of a
    /// disposed run.
    NotPending,
    /// The call's deadline had passed at the result's time: it was rejected with `timeout` instead.
    TimedOut,
}

/// A pi result the queue did not accept. `outs` holds what the same step produced anyway (calls
/// whose deadline passed, including this one) and must still be delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub reason: RefuseReason,
    pub outs: Vec<BridgeOut>,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason {
            RefuseReason::NotPending => f.write_str("pi bridge result refused: no pending call has this id"),
            RefuseReason::TimedOut => f.write_str("pi bridge result refused: the call timed out"),
        }
    }
}

impl std::error::Error for Refused {}

/// Diagnostic event names (SPEC §7).
pub mod events {
    pub const RUN_CREATED: &str = "run_created";
    pub const RUN_SKIPPED: &str = "run_skipped";
    pub const TOOLS_EXPOSED: &str = "tools_exposed";
    pub const RUN_DISPOSED: &str = "run_disposed";
    pub const RUN_CANCELLED: &str = "run_cancelled";
    pub const REQUEST_QUEUED: &str = "request_queued";
    pub const REQUEST_RESOLVED: &str = "request_resolved";
    pub const REQUEST_REJECTED: &str = "request_rejected";
}

/// `cursor-mcp-call-<first 8 hex of sha256(id)>`: how diagnostics name an MCP request.
pub fn hashed_mcp_call_id(mcp_request_id: &str) -> String {
    format!("cursor-mcp-call-{}", toolstream_schemas::ids::hash8(mcp_request_id))
}

#[cfg(test)]
mod tests;
