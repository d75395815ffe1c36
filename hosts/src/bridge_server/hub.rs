//! The [`Hub`]: what the HTTP layer, the MCP handlers and the server handle share. It carries
//! calls between the MCP handlers, the bridge queue actor and the owner of the runs (pi's side):
//! it keeps one waiter per pending MCP call, delivers the queue's outputs in order (dispatches and
//! aborts to the owner as [`BridgeEvent`]s, results and rejections to the waiters, diagnostics to
//! [`Diagnostics`]), and ticks the queue at its next deadline.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::Addr;
use futures::future::BoxFuture;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::ErrorData as McpError;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use toolstream_actors::bridge::exposure::ExposedTool;
use toolstream_actors::bridge::messages::{
    BridgeCallTool, BridgeCancelMcpRequest, BridgeListTools, BridgeNextDeadline, BridgeTick,
};
use toolstream_actors::bridge::{BridgeOut, BridgeQueueActor, RejectKind};

use super::diagnostics::Diagnostics;
use super::handler::{CallOutcome, RunCalls, RunHandler};
use super::routes::{Lookup, Routes};
use super::sessions::{RouteId, RouteSessions, SessionPool};
use super::settings::BridgeSettings;

/// What the owner of the runs (pi's side) must do.
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeEvent {
    /// Execute pi tool `pi_tool` with `args` as pi tool call `pi_call_id`, then answer with
    /// [`BridgeServer::pi_result`].
    Call { run_id: String, pi_call_id: String, pi_tool: String, args: Value },
    /// Abort pi's execution of `pi_call_id` (its MCP call was rejected: timeout, aborted, …).
    Abort { pi_call_id: String, reason: RejectKind },
}

pub(super) type McpService = StreamableHttpService<RunHandler, RouteSessions>;

#[derive(Clone)]
pub(super) struct LiveRoute {
    pub(super) id: RouteId,
    pub(super) service: McpService,
    /// Cancelling it closes the route's MCP sessions (the transport).
    pub(super) closed: CancellationToken,
}

/// Shared by the HTTP layer, the MCP handlers and the server handle.
pub struct Hub {
    pub(super) actor: Addr<BridgeQueueActor>,
    pub(super) settings: BridgeSettings,
    pub(super) diagnostics: Diagnostics,
    pub(super) events: mpsc::UnboundedSender<BridgeEvent>,
    pub(super) waiters: Mutex<HashMap<String, oneshot::Sender<CallOutcome>>>,
    pub(super) routes: Mutex<Routes<LiveRoute>>,
    /// Every route's MCP sessions, capped.
    pub(super) sessions: Arc<SessionPool>,
    /// run id → token (for dispose).
    pub(super) tokens: Mutex<HashMap<String, String>>,
    pub(super) clock: Instant,
    pub(super) deadline_changed: Notify,
    pub(super) next_call: AtomicU64,
    pub(super) next_session: AtomicU64,
    pub(super) next_route: AtomicU64,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// What a request from `peer` for `path` gets (`None`: the registry is unusable).
    pub(super) fn lookup(&self, peer: IpAddr, path: &str) -> Option<Lookup<LiveRoute>> {
        self.routes.lock().ok().map(|r| r.lookup(peer, path))
    }

    pub(super) fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Deliver the queue's outputs, in order.
    pub(super) fn deliver(&self, outs: Vec<BridgeOut>) {
        let mut last_reject = RejectKind::Aborted;
        for out in outs {
            match out {
                BridgeOut::Dispatch { run_id, pi_call_id, pi_tool, args } => {
                    let _ = self.events.send(BridgeEvent::Call { run_id, pi_call_id, pi_tool, args });
                }
                BridgeOut::Resolve { mcp_request_id, content, is_error } => {
                    self.answer(&mcp_request_id, CallOutcome::Result { content, is_error });
                }
                BridgeOut::Reject { mcp_request_id, kind, message } => {
                    last_reject = kind;
                    self.answer(&mcp_request_id, CallOutcome::Rejected { kind, message });
                }
                BridgeOut::AbortPiExecution { pi_call_id } => {
                    let _ = self.events.send(BridgeEvent::Abort { pi_call_id, reason: last_reject });
                }
                BridgeOut::Diagnostic { event, fields } => self.diagnostics.emit(event, &fields),
            }
        }
    }

    fn answer(&self, mcp_request_id: &str, outcome: CallOutcome) {
        let waiter = self.waiters.lock().ok().and_then(|mut w| w.remove(mcp_request_id));
        if let Some(tx) = waiter {
            let _ = tx.send(outcome);
        }
    }

    async fn tools_of(&self, run_id: &str) -> Result<Arc<[ExposedTool]>, McpError> {
        self.actor
            .send(BridgeListTools { run_id: run_id.to_owned() })
            .await
            .map_err(|_| McpError::internal_error("the pi bridge queue is gone", None))?
            .ok_or_else(|| McpError::internal_error("Cursor pi bridge run disposed", None))
    }

    /// One MCP `tools/call`: queue it, then wait for its end (or the client's cancellation).
    async fn call(
        &self,
        run_id: &str,
        mcp_tool: &str,
        mcp_request_id: String,
        args: Value,
        cancelled: CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        let (tx, mut rx) = oneshot::channel();
        if let Ok(mut w) = self.waiters.lock() {
            w.insert(mcp_request_id.clone(), tx);
        }
        let n = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let msg = BridgeCallTool {
            run_id: run_id.to_owned(),
            mcp_tool: mcp_tool.to_owned(),
            bridge_call_id: format!("cursor-pi-bridge-call-{n}"),
            mcp_request_id: mcp_request_id.clone(),
            args,
            now_ms: self.now_ms(),
        };
        let queued = self.actor.send(msg).await;
        let outs = match queued {
            Ok(Ok(outs)) => outs,
            Ok(Err(unknown)) => {
                self.forget(&mcp_request_id);
                return Ok(CallOutcome::Unknown(unknown.to_string()));
            }
            Err(_) => {
                self.forget(&mcp_request_id);
                return Err(McpError::internal_error("the pi bridge queue is gone", None));
            }
        };
        self.deliver(outs);
        self.deadline_changed.notify_one();
        tokio::select! {
            outcome = &mut rx => return outcome.map_err(|_| McpError::internal_error("Cursor pi bridge call dropped", None)),
            () = cancelled.cancelled() => {}
        }
        // The client cancelled: reject `aborted` (and abort pi's execution), unless it ended first.
        if let Ok(outs) = self.actor.send(BridgeCancelMcpRequest { mcp_request_id, now_ms: self.now_ms() }).await {
            self.deliver(outs);
        }
        rx.await.map_err(|_| McpError::internal_error("Cursor pi bridge CallTool aborted", None))
    }

    fn forget(&self, mcp_request_id: &str) {
        if let Ok(mut w) = self.waiters.lock() {
            w.remove(mcp_request_id);
        }
    }

    /// Tick the queue at its next deadline, forever (until the server stops).
    pub(super) async fn tick_deadlines(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let next = self.actor.send(BridgeNextDeadline).await.ok().flatten();
            let wait = match next {
                Some(d) => Duration::from_millis(d.saturating_sub(self.now_ms())),
                None => Duration::from_secs(3600),
            };
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.deadline_changed.notified() => continue,
                () = tokio::time::sleep(wait) => {}
            }
            match self.actor.send(BridgeTick { now_ms: self.now_ms() }).await {
                Ok(outs) => self.deliver(outs),
                Err(_) => return,
            }
        }
    }
}

impl RunCalls for Hub {
    fn list_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.connect_timeout_ms)
    }

    fn list_tools<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Arc<[ExposedTool]>, McpError>> {
        Box::pin(self.tools_of(run_id))
    }

    fn call_tool<'a>(
        &'a self,
        run_id: &'a str,
        mcp_tool: &'a str,
        mcp_request_id: String,
        args: Value,
        cancelled: CancellationToken,
    ) -> BoxFuture<'a, Result<CallOutcome, McpError>> {
        Box::pin(self.call(run_id, mcp_tool, mcp_request_id, args, cancelled))
    }
}
