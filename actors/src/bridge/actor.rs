//! [`BridgeQueueActor`]: the actix actor owning a [`BridgeQueue`]; each message is one core call.

use actix::{Actor, Context, Handler, MessageResult};

use super::{BridgeOut, BridgeQueue, BridgeQueueConfig, Refused};
use crate::messages::{
    BridgeAttachRun, BridgeCancelMcpRequest, BridgeCancelRun, BridgeDisposeRun, BridgeEnqueue, BridgeNextDeadline,
    BridgePiToolResult, BridgeTick,
};

/// Thin actor around the bridge queue core: no timers of its own (time comes in the messages).
#[derive(Debug, Default)]
pub struct BridgeQueueActor {
    queue: BridgeQueue,
}

impl BridgeQueueActor {
    pub fn new(cfg: BridgeQueueConfig) -> Self {
        BridgeQueueActor { queue: BridgeQueue::new(cfg) }
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
        MessageResult(self.queue.dispose_run(&msg.run_id, msg.now_ms))
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
