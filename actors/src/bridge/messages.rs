//! The typed messages of the bridge queue actor. Every message that depends on time carries the
//! event time `now_ms` (SPEC §2); the actor keeps no clock of its own.

use actix::Message;
use std::sync::Arc;

use super::exposure::ExposedTool;
use super::{BridgeOut, BridgeRequest, BridgeToolResult, Refused, RunKey, UnknownTool};

/// Set the tools a run exposes (replacing any earlier set); answers the `tools_exposed`
/// diagnostics, or `run_skipped` when the set is empty (the bridge is then off for that run).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeExposeTools {
    pub run_id: String,
    pub tools: Vec<ExposedTool>,
}

/// The tools a run exposes (MCP `tools/list`); `None` for an unknown or disposed run.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Option<Arc<[ExposedTool]>>")]
pub struct BridgeListTools {
    pub run_id: String,
}

/// An MCP `tools/call` by MCP name: resolved to the pi tool among the run's exposed tools and
/// queued ([`BridgeEnqueue`]); an unknown name is refused (the endpoint answers `isError`).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<BridgeOut>, UnknownTool>")]
pub struct BridgeCallTool {
    pub run_id: String,
    pub mcp_tool: String,
    pub bridge_call_id: String,
    pub mcp_request_id: String,
    pub args: serde_json::Value,
    pub now_ms: u64,
}

/// Queue an MCP `tools/call` for a pi tool ([`BridgeQueue::enqueue`](crate::bridge::BridgeQueue::enqueue)).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeEnqueue {
    pub request: BridgeRequest,
    pub now_ms: u64,
}

/// A run attached: it takes the held calls meant for it.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeAttachRun {
    pub run: RunKey,
    pub now_ms: u64,
}

/// A pi `toolResult` for a bridged call; refused when the id is no longer pending.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<BridgeOut>, Refused>")]
pub struct BridgePiToolResult {
    pub pi_call_id: String,
    pub result: BridgeToolResult,
    pub now_ms: u64,
}

/// The MCP client cancelled a request.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeCancelMcpRequest {
    pub mcp_request_id: String,
    pub now_ms: u64,
}

/// A run was cancelled: its pending and held calls are rejected.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeCancelRun {
    pub run_id: String,
    pub now_ms: u64,
}

/// A run is gone: its calls are rejected and later results for them refused.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeDisposeRun {
    pub run_id: String,
    pub now_ms: u64,
}

/// Event time advanced: calls whose deadline is ≤ `now_ms` time out.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Vec<BridgeOut>")]
pub struct BridgeTick {
    pub now_ms: u64,
}

/// The earliest pending deadline, for the clock to schedule the next [`BridgeTick`].
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Option<u64>")]
pub struct BridgeNextDeadline;
