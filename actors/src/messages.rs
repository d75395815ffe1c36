//! The typed messages the actors exchange. Every message that depends on time carries the event
//! time `now_ms` (SPEC §2); actors keep no clock of their own.

use actix::Message;

// --- bridge queue ---

use crate::bridge::{BridgeOut, BridgeRequest, BridgeToolResult, Refused, RunKey};

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

// --- shard stages ---

/// A batch of items (or output events) handed from one stage of a shard to the next, in order.
/// Batching pays an actor hop per batch, not per event (ARCHITECTURE: Batching). The reply says
/// whether every later stage handled it.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), StageFailed>")]
pub struct Batch<T: Send + 'static>(pub Vec<T>);

/// A later stage of the shard is gone (it panicked): this batch's outputs are lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageFailed;
