//! [`BridgeServer`]: the HTTP listener (axum, its front in `super::front`), the route registry, the
//! capped MCP sessions (`super::sessions`), run by way of the hub (`super::hub`) that carries calls
//! between the MCP handlers, the bridge queue actor and the owner of the runs (pi's side).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use actix::Actor;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;
use toolstream_actors::bridge::exposure::{expose, PiToolDef};
use toolstream_actors::bridge::messages::{
    BridgeAttachRun, BridgeCancelRun, BridgeDisposeRun, BridgeExposeTools, BridgePiToolResult,
};
use toolstream_actors::bridge::{BridgeQueueActor, BridgeQueueConfig, BridgeToolResult, RefuseReason, RunKey};

use super::diagnostics::Diagnostics;
use super::front;
use super::handler::RunHandler;
use super::hub::{BridgeEvent, Hub, LiveRoute};
use super::routes::{self, Routes};
use super::sessions::SessionPool;
use super::settings::{BridgeSettings, MAX_BODY_BYTES};

/// Errors of the bridge server.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("bridge listener: {0}")]
    Io(#[from] std::io::Error),
    #[error("the bridge queue actor is gone")]
    ActorGone,
    #[error("no run {0} on this bridge")]
    UnknownRun(String),
    #[error("pi result refused: {0}")]
    Refused(&'static str),
}

/// A run's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRoute {
    pub run_id: String,
    /// `http://127.0.0.1:<port>/cursor-pi-tool-bridge/<token>/mcp`: a capability; never logged.
    pub url: String,
}

/// Options of [`BridgeServer::start`].
#[derive(Debug, Clone)]
pub struct BridgeServerOptions {
    /// The address to listen on (port: ephemeral). 127.0.0.1 unless a test needs another.
    pub listen: IpAddr,
    pub settings: BridgeSettings,
}

impl Default for BridgeServerOptions {
    fn default() -> Self {
        BridgeServerOptions { listen: IpAddr::V4(Ipv4Addr::LOCALHOST), settings: BridgeSettings::default() }
    }
}

/// The running bridge endpoint. Must be started inside an actix system (it starts the queue actor
/// and spawns tokio tasks).
#[derive(Debug)]
pub struct BridgeServer {
    hub: Arc<Hub>,
    addr: SocketAddr,
    stop: CancellationToken,
}

impl BridgeServer {
    /// Listen on `<listen>:<ephemeral>`; the events for pi's side arrive on the returned receiver.
    pub async fn start(
        opts: BridgeServerOptions,
    ) -> Result<(BridgeServer, mpsc::UnboundedReceiver<BridgeEvent>), BridgeError> {
        let diagnostics = Diagnostics::new(opts.settings.debug_stderr, opts.settings.debug_file.as_deref())?;
        tracing::debug!(
            call_timeout_ms = opts.settings.call_timeout_ms,
            connect_timeout_ms = opts.settings.connect_timeout_ms,
            "pi tool bridge starting"
        );
        let actor = BridgeQueueActor::new(BridgeQueueConfig { call_timeout_ms: opts.settings.call_timeout_ms }).start();
        let (events, rx) = mpsc::unbounded_channel();
        let sessions = SessionPool::new(opts.settings.sessions);
        let hub = Arc::new(Hub {
            actor,
            settings: opts.settings,
            diagnostics,
            events,
            waiters: Mutex::new(HashMap::new()),
            routes: Mutex::new(Routes::default()),
            sessions,
            tokens: Mutex::new(HashMap::new()),
            clock: Instant::now(),
            deadline_changed: Notify::new(),
            next_call: AtomicU64::new(0),
            next_session: AtomicU64::new(0),
            next_route: AtomicU64::new(0),
        });
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(opts.listen, 0)).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let app = front::app(hub.clone(), opts.listen);
        let shutdown = stop.clone();
        tokio::spawn(async move {
            let serve = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
                .with_graceful_shutdown(async move { shutdown.cancelled_owned().await });
            if let Err(e) = serve.await {
                tracing::warn!("pi bridge listener stopped: {e}");
            }
        });
        tokio::spawn(hub.clone().tick_deadlines(stop.clone()));
        Ok((BridgeServer { hub, addr, stop }, rx))
    }

    /// The listening address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn settings(&self) -> &BridgeSettings {
        &self.hub.settings
    }

    /// MCP sessions open now, all runs (at most `settings().sessions.total`).
    pub fn session_count(&self) -> usize {
        self.hub.sessions.count()
    }

    /// Add a run exposing pi's `tools` (as SPEC §7 selects them): its own route. `None` when the
    /// bridge is off or exposes nothing for these tools (diagnostic `run_skipped`).
    pub async fn add_run(&self, tools: &[PiToolDef]) -> Result<Option<RunRoute>, BridgeError> {
        let run_uuid = routes::new_token()?;
        let run_id = format!("cursor-pi-bridge-run-{}", &run_uuid[..12]);
        let exposed = expose(tools, &self.hub.settings.exposure);
        let empty = exposed.is_empty();
        let outs = self
            .hub
            .actor
            .send(BridgeExposeTools { run_id: run_id.clone(), tools: exposed })
            .await
            .map_err(|_| BridgeError::ActorGone)?;
        self.hub.deliver(outs);
        if empty {
            return Ok(None);
        }
        let outs = self
            .hub
            .actor
            .send(BridgeAttachRun { run: RunKey { run_id: run_id.clone(), uuid: run_uuid }, now_ms: self.hub.now_ms() })
            .await
            .map_err(|_| BridgeError::ActorGone)?;
        self.hub.deliver(outs);

        let token = routes::new_token()?;
        let closed = self.stop.child_token();
        let (hub, rid) = (self.hub.clone(), run_id.clone());
        // Host and Origin are checked once, for both servers, by the guard in front
        // (`crate::local_http`); rmcp's own Host list would be a second, different rule.
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(closed.clone())
            .disable_allowed_hosts()
            .with_max_request_body_bytes(MAX_BODY_BYTES);
        let route_id = self.hub.next_route.fetch_add(1, Ordering::Relaxed);
        let sessions = Arc::new(self.hub.sessions.route(route_id));
        let service = StreamableHttpService::new(
            move || {
                let session = hub.next_session.fetch_add(1, Ordering::Relaxed) + 1;
                Ok(RunHandler { calls: hub.clone(), run_id: rid.clone(), session })
            },
            sessions,
            config,
        );
        if let Ok(mut r) = self.hub.routes.lock() {
            r.insert(token.clone(), LiveRoute { id: route_id, service, closed });
        }
        if let Ok(mut t) = self.hub.tokens.lock() {
            t.insert(run_id.clone(), token.clone());
        }
        let url = format!("http://{}{}", self.addr, routes::route_path(&token));
        Ok(Some(RunRoute { run_id, url }))
    }

    /// Dispose a run: close its transport, unregister its route (410 afterwards), reject its
    /// pending calls (`disposed`, aborting pi's executions).
    pub async fn dispose_run(&self, run_id: &str) -> Result<(), BridgeError> {
        let token = self.hub.tokens.lock().ok().and_then(|mut t| t.remove(run_id));
        let Some(token) = token else { return Err(BridgeError::UnknownRun(run_id.to_owned())) };
        // New requests get 410 from here on; pending calls are rejected (their MCP answers go out)
        // before the transport closes.
        let route = self.hub.routes.lock().ok().and_then(|mut r| r.dispose(&token));
        let outs = self
            .hub
            .actor
            .send(BridgeDisposeRun { run_id: run_id.to_owned(), now_ms: self.hub.now_ms() })
            .await
            .map_err(|_| BridgeError::ActorGone);
        if let Ok(outs) = &outs {
            self.hub.deliver(outs.clone());
        }
        if let Some(route) = route {
            route.closed.cancel();
            self.hub.sessions.forget_route(route.id);
        }
        outs.map(|_| ())
    }

    /// Cancel a run: reject its pending and queued calls (`cancelled`); its route stays.
    pub async fn cancel_run(&self, run_id: &str) -> Result<(), BridgeError> {
        let outs = self
            .hub
            .actor
            .send(BridgeCancelRun { run_id: run_id.to_owned(), now_ms: self.hub.now_ms() })
            .await
            .map_err(|_| BridgeError::ActorGone)?;
        self.hub.deliver(outs);
        Ok(())
    }

    /// pi's result for a dispatched call. Refused when no pending call has this id (unknown,
    /// answered, timed out, aborted, or of a disposed run): it never resolves another call.
    pub async fn pi_result(&self, pi_call_id: &str, content: Vec<Value>, is_error: bool) -> Result<(), BridgeError> {
        let msg = BridgePiToolResult {
            pi_call_id: pi_call_id.to_owned(),
            result: BridgeToolResult { content, is_error },
            now_ms: self.hub.now_ms(),
        };
        match self.hub.actor.send(msg).await.map_err(|_| BridgeError::ActorGone)? {
            Ok(outs) => {
                self.hub.deliver(outs);
                Ok(())
            }
            Err(refused) => {
                self.hub.deliver(refused.outs);
                Err(BridgeError::Refused(match refused.reason {
                    RefuseReason::NotPending => "no pending call has this id",
                    RefuseReason::TimedOut => "the call timed out",
                }))
            }
        }
    }

    /// Dispose every run and stop listening.
    pub async fn shutdown(&self) {
        let runs: Vec<String> = self.hub.tokens.lock().map(|t| t.keys().cloned().collect()).unwrap_or_default();
        for run in runs {
            let _ = self.dispose_run(&run).await;
        }
        self.stop.cancel();
    }
}
