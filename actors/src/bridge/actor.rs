//! [`BridgeQueueActor`]: the actix actor owning a [`BridgeQueue`] and each run's exposed tools;
//! each message is one core call.

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, Context, Handler, MessageResult};
use serde_json::{Map, Value};

use super::exposure::ExposedTool;
use super::messages::{
    BridgeAttachRun, BridgeCallTool, BridgeCancelMcpRequest, BridgeCancelRun, BridgeDisposeRun, BridgeEnqueue,
    BridgeExposeTools, BridgeListTools, BridgeNextDeadline, BridgePiToolResult, BridgeTick,
};
use super::{events, BridgeOut, BridgeQueue, BridgeQueueConfig, BridgeRequest, Refused};

/// A `tools/call` named no tool the run exposes (SPEC §7: an `isError` result, not a queued call).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown pi bridge tool: {0}")]
pub struct UnknownTool(pub String);

/// Thin actor around the bridge queue core: no timers of its own (time comes in the messages).
#[derive(Debug, Default)]
pub struct BridgeQueueActor {
    queue: BridgeQueue,
    /// The tools each run exposes, by run id (removed when the run is disposed).
    exposed: HashMap<String, Arc<[ExposedTool]>>,
}

impl BridgeQueueActor {
    pub fn new(cfg: BridgeQueueConfig) -> Self {
        BridgeQueueActor { queue: BridgeQueue::new(cfg), exposed: HashMap::new() }
    }

    pub fn queue(&self) -> &BridgeQueue {
        &self.queue
    }
}

impl Actor for BridgeQueueActor {
    type Context = Context<Self>;
}

impl Handler<BridgeEnqueue> for BridgeQueueActor {
    type Result = MessageResult<BridgeEnqueue>;
    fn handle(&mut self, msg: BridgeEnqueue, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.enqueue(msg.request, msg.now_ms))
    }
}

impl Handler<BridgeAttachRun> for BridgeQueueActor {
    type Result = MessageResult<BridgeAttachRun>;
    fn handle(&mut self, msg: BridgeAttachRun, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.attach_run(msg.run, msg.now_ms))
    }
}

impl Handler<BridgePiToolResult> for BridgeQueueActor {
    type Result = Result<Vec<BridgeOut>, Refused>;
    fn handle(&mut self, msg: BridgePiToolResult, _: &mut Context<Self>) -> Self::Result {
        self.queue.resolve(&msg.pi_call_id, msg.result, msg.now_ms)
    }
}

impl Handler<BridgeCancelMcpRequest> for BridgeQueueActor {
    type Result = MessageResult<BridgeCancelMcpRequest>;
    fn handle(&mut self, msg: BridgeCancelMcpRequest, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.cancel_mcp_request(&msg.mcp_request_id, msg.now_ms))
    }
}

impl Handler<BridgeCancelRun> for BridgeQueueActor {
    type Result = MessageResult<BridgeCancelRun>;
    fn handle(&mut self, msg: BridgeCancelRun, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.cancel_run(&msg.run_id, msg.now_ms))
    }
}

impl Handler<BridgeDisposeRun> for BridgeQueueActor {
    type Result = MessageResult<BridgeDisposeRun>;
    fn handle(&mut self, msg: BridgeDisposeRun, _: &mut Context<Self>) -> Self::Result {
        self.exposed.remove(&msg.run_id);
        MessageResult(self.queue.dispose_run(&msg.run_id, msg.now_ms))
    }
}

impl Handler<BridgeExposeTools> for BridgeQueueActor {
    type Result = MessageResult<BridgeExposeTools>;
    fn handle(&mut self, msg: BridgeExposeTools, _: &mut Context<Self>) -> Self::Result {
        let run_fields = || {
            let mut fields = Map::new();
            fields.insert("runId".into(), Value::from(msg.run_id.as_str()));
            fields
        };
        let mut out = Vec::new();
        if msg.tools.is_empty() {
            out.push(BridgeOut::Diagnostic { event: events::RUN_SKIPPED, fields: run_fields() });
        }
        for tool in &msg.tools {
            let mut fields = run_fields();
            fields.insert("mcpToolName".into(), Value::from(tool.mcp_name.as_str()));
            fields.insert("piToolName".into(), Value::from(tool.pi_name.as_str()));
            out.push(BridgeOut::Diagnostic { event: events::TOOLS_EXPOSED, fields });
        }
        self.exposed.insert(msg.run_id, msg.tools.into());
        MessageResult(out)
    }
}

impl Handler<BridgeListTools> for BridgeQueueActor {
    type Result = MessageResult<BridgeListTools>;
    fn handle(&mut self, msg: BridgeListTools, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.exposed.get(&msg.run_id).cloned())
    }
}

impl Handler<BridgeCallTool> for BridgeQueueActor {
    type Result = Result<Vec<BridgeOut>, UnknownTool>;
    fn handle(&mut self, msg: BridgeCallTool, _: &mut Context<Self>) -> Self::Result {
        let tool = self
            .exposed
            .get(&msg.run_id)
            .and_then(|tools| tools.iter().find(|t| t.mcp_name == msg.mcp_tool))
            .ok_or_else(|| UnknownTool(msg.mcp_tool.clone()))?;
        let request = BridgeRequest {
            bridge_call_id: msg.bridge_call_id,
            mcp_request_id: msg.mcp_request_id,
            pi_tool: tool.pi_name.clone(),
            mcp_tool: msg.mcp_tool,
            args: msg.args,
            run: Some(msg.run_id),
        };
        Ok(self.queue.enqueue(request, msg.now_ms))
    }
}

impl Handler<BridgeTick> for BridgeQueueActor {
    type Result = MessageResult<BridgeTick>;
    fn handle(&mut self, msg: BridgeTick, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.queue.advance(msg.now_ms))
    }
}

impl Handler<BridgeNextDeadline> for BridgeQueueActor {
    type Result = Option<u64>;
    fn handle(&mut self, _: BridgeNextDeadline, _: &mut Context<Self>) -> Self::Result {
        self.queue.next_deadline()
    }
}
