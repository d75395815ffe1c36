//! Bounded MCP sessions. rmcp's [`LocalSessionManager`] keeps every session a client opens
//! (`initialize`) for 300 s of idleness, ~67 KB each, with no cap: anyone holding a route's URL
//! could grow the process without bound (16,000 `initialize` → 1 GB). Each route's sessions go
//! through a [`RouteSessions`] wrapper that books them in one [`SessionPool`] per server, capped per
//! route and in total ([`SessionLimits`], `BridgeSettings::sessions`).
//!
//! Past a cap the **least recently used idle** session is closed to make room (its client, on its
//! next request, gets 404 and — as the Streamable HTTP spec says — starts a new session). A session
//! is busy while one of its streams is open: a request being answered, or the client's standing
//! `GET` stream (the official SDKs keep one open for the session's life), so a live client is
//! never evicted by a flood of new ones. When every session at the cap is busy, a new `initialize`
//! is refused with 503 ([`SessionPool::can_admit`], checked before rmcp sees the request).
//! Eviction over 503-only: a client that stopped using its session (a crashed cursor-agent) must not
//! lock the route for 300 s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

/// The caps on MCP sessions of one bridge server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions of one route (one run) at once.
    pub per_route: usize,
    /// Sessions of all routes at once.
    pub total: usize,
}

/// A route's id in the pool.
pub(super) type RouteId = u64;

#[derive(Debug)]
struct Entry {
    route: RouteId,
    last_used: u64,
    /// Open response streams (requests being answered, the standing GET stream).
    streams: usize,
}

/// Every session is busy at the cap.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Full;

/// The bookkeeping of the sessions (pure: no I/O). Admissions in progress count like sessions.
#[derive(Debug, Default)]
struct Ledger {
    sessions: HashMap<SessionId, Entry>,
    /// Sessions and admissions in progress, per route.
    per_route: HashMap<RouteId, usize>,
    total: usize,
    tick: u64,
}

impl Ledger {
    fn on_route(&self, route: RouteId) -> usize {
        self.per_route.get(&route).copied().unwrap_or(0)
    }

    /// The sessions to close so one more fits on `route`: the least recently used idle ones, of
    /// the route while it is at its cap, then of any route while the total is.
    fn victims(&self, route: RouteId, limits: SessionLimits) -> Result<Vec<(RouteId, SessionId)>, Full> {
        let mut idle: Vec<(&SessionId, &Entry)> = self.sessions.iter().filter(|(_, e)| e.streams == 0).collect();
        idle.sort_by_key(|(_, e)| e.last_used);
        let mut idle: Vec<Option<(&SessionId, &Entry)>> = idle.into_iter().map(Some).collect();
        let mut take = |same_route: bool| {
            let slot = idle.iter_mut().find(|s| s.is_some_and(|(_, e)| !same_route || e.route == route))?;
            slot.take().map(|(id, e)| (e.route, id.clone()))
        };
        let (mut on_route, mut total) = (self.on_route(route), self.total);
        let mut out = Vec::new();
        while on_route >= limits.per_route.max(1) {
            let victim = take(true).ok_or(Full)?;
            on_route -= 1;
            total -= 1;
            out.push(victim);
        }
        while total >= limits.total.max(1) {
            let victim = take(false).ok_or(Full)?;
            total -= 1;
            out.push(victim);
        }
        Ok(out)
    }

    /// Make room for one more session on `route` and count it as admitted; the sessions to close.
    fn admit(&mut self, route: RouteId, limits: SessionLimits) -> Result<Vec<(RouteId, SessionId)>, Full> {
        let victims = self.victims(route, limits)?;
        for (_, id) in &victims {
            self.remove(id);
        }
        *self.per_route.entry(route).or_default() += 1;
        self.total += 1;
        Ok(victims)
    }

    /// The admitted session got its id.
    fn insert(&mut self, route: RouteId, id: SessionId) {
        self.tick += 1;
        self.sessions.insert(id, Entry { route, last_used: self.tick, streams: 0 });
    }

    /// The admitted session was not made.
    fn cancel(&mut self, route: RouteId) {
        self.uncount(route);
    }

    fn uncount(&mut self, route: RouteId) {
        if let Some(n) = self.per_route.get_mut(&route) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_route.remove(&route);
            }
        }
        self.total = self.total.saturating_sub(1);
    }

    fn remove(&mut self, id: &SessionId) -> bool {
        match self.sessions.remove(id) {
            Some(e) => {
                self.uncount(e.route);
                true
            }
            None => false,
        }
    }

    fn touch(&mut self, id: &SessionId) -> Option<&mut Entry> {
        self.tick += 1;
        let tick = self.tick;
        let e = self.sessions.get_mut(id)?;
        e.last_used = tick;
        Some(e)
    }

    fn open_stream(&mut self, id: &SessionId) {
        if let Some(e) = self.touch(id) {
            e.streams += 1;
        }
    }

    fn close_stream(&mut self, id: &SessionId) {
        if let Some(e) = self.touch(id) {
            e.streams = e.streams.saturating_sub(1);
        }
    }

    fn forget_route(&mut self, route: RouteId) {
        let ids: Vec<SessionId> =
            self.sessions.iter().filter(|(_, e)| e.route == route).map(|(id, _)| id.clone()).collect();
        for id in &ids {
            self.remove(id);
        }
    }

    fn contains(&self, route: RouteId, id: &str) -> bool {
        self.sessions.get(id).is_some_and(|e| e.route == route)
    }
}

/// The sessions of one bridge server, all routes.
#[derive(Debug)]
pub(super) struct SessionPool {
    limits: SessionLimits,
    ledger: Mutex<Ledger>,
    /// Each route's session store, to close a session evicted by another route's `initialize`.
    stores: Mutex<HashMap<RouteId, Weak<LocalSessionManager>>>,
}

impl SessionPool {
    pub(super) fn new(limits: SessionLimits) -> Arc<SessionPool> {
        Arc::new(SessionPool { limits, ledger: Mutex::default(), stores: Mutex::default() })
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session manager of a new route.
    pub(super) fn route(self: &Arc<Self>, route: RouteId) -> RouteSessions {
        let inner = Arc::new(LocalSessionManager::default());
        self.stores.lock().unwrap_or_else(PoisonError::into_inner).insert(route, Arc::downgrade(&inner));
        RouteSessions { route, inner, pool: self.clone() }
    }

    /// Whether a new session on `route` would be admitted now (else: 503).
    pub(super) fn can_admit(&self, route: RouteId) -> bool {
        self.ledger().victims(route, self.limits).is_ok()
    }

    pub(super) fn contains(&self, route: RouteId, id: &str) -> bool {
        self.ledger().contains(route, id)
    }

    /// Sessions open now, all routes.
    pub(super) fn count(&self) -> usize {
        self.ledger().sessions.len()
    }

    /// A disposed route: its sessions no longer count (its transport closes them).
    pub(super) fn forget_route(&self, route: RouteId) {
        self.ledger().forget_route(route);
        self.stores.lock().unwrap_or_else(PoisonError::into_inner).remove(&route);
    }

    async fn evict(&self, victims: Vec<(RouteId, SessionId)>) {
        for (route, id) in victims {
            let store = self.stores.lock().unwrap_or_else(PoisonError::into_inner).get(&route).and_then(Weak::upgrade);
            if let Some(store) = store {
                tracing::debug!("MCP session limit reached: the least recently used idle session is closed");
                if let Err(e) = store.close_session(&id).await {
                    tracing::debug!("closing an evicted MCP session: {e}");
                }
            }
        }
    }

    fn busy(self: &Arc<Self>, id: &SessionId) -> Busy {
        self.ledger().open_stream(id);
        Busy { pool: self.clone(), id: id.clone() }
    }
}

/// A session's open stream; dropping it (the response ended or the client left) ends the use.
struct Busy {
    pool: Arc<SessionPool>,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.pool.ledger().close_stream(&self.id);
    }
}

/// A stream that keeps its session busy while it is open.
fn held<S: Stream<Item = ServerSseMessage>>(stream: S, busy: Busy) -> impl Stream<Item = ServerSseMessage> {
    stream.map(move |m| {
        let _held = &busy;
        m
    })
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("every MCP session of this endpoint is in use")]
    Full,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// One route's sessions: rmcp's in-memory store, booked in the server's [`SessionPool`].
#[derive(Debug)]
pub(super) struct RouteSessions {
    route: RouteId,
    inner: Arc<LocalSessionManager>,
    pool: Arc<SessionPool>,
}

impl SessionManager for RouteSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let victims = self.pool.ledger().admit(self.route, self.pool.limits).map_err(|Full| SessionError::Full)?;
        self.pool.evict(victims).await;
        match self.inner.create_session().await {
            Ok((id, transport)) => {
                self.pool.ledger().insert(self.route, id.clone());
                Ok((id, transport))
            }
            Err(e) => {
                self.pool.ledger().cancel(self.route);
                Err(e.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.pool.ledger().touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.pool.ledger().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.pool.busy(id);
        Ok(held(self.inner.create_stream(id, message).await?, busy))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.pool.ledger().touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.pool.busy(id);
        Ok(held(self.inner.create_standalone_stream(id).await?, busy))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.pool.busy(id);
        Ok(held(self.inner.resume(id, last_event_id).await?, busy))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const LIMITS: SessionLimits = SessionLimits { per_route: 3, total: 5 };

    fn id(n: u32) -> SessionId {
        SessionId::from(format!("s{n}"))
    }

    /// Admit and insert session `n` on `route`; the ids it evicted.
    fn open(l: &mut Ledger, route: RouteId, n: u32) -> Result<Vec<SessionId>, Full> {
        let victims = l.admit(route, LIMITS)?;
        l.insert(route, id(n));
        Ok(victims.into_iter().map(|(_, id)| id).collect())
    }

    #[test]
    fn a_full_route_evicts_its_least_recently_used_idle_session() {
        let mut l = Ledger::default();
        for n in 0..3 {
            assert_eq!(open(&mut l, 1, n), Ok(vec![]));
        }
        l.touch(&id(0));
        assert_eq!(open(&mut l, 1, 3), Ok(vec![id(1)]), "s0 was used after s1");
        assert_eq!(l.on_route(1), 3);
        assert!(!l.contains(1, "s1") && l.contains(1, "s0") && l.contains(1, "s3"));
    }

    #[test]
    fn busy_sessions_are_kept_and_a_route_of_busy_sessions_is_full() {
        let mut l = Ledger::default();
        for n in 0..3 {
            open(&mut l, 1, n).unwrap();
        }
        l.open_stream(&id(0));
        l.open_stream(&id(1));
        assert_eq!(open(&mut l, 1, 3), Ok(vec![id(2)]));
        l.open_stream(&id(3));
        assert_eq!(l.admit(1, LIMITS), Err(Full));
        assert_eq!(l.on_route(1), 3, "a refused admission counts nothing");
        l.close_stream(&id(1));
        assert_eq!(open(&mut l, 1, 4), Ok(vec![id(1)]));
    }

    #[test]
    fn the_total_cap_evicts_across_routes() {
        let mut l = Ledger::default();
        for n in 0..3 {
            open(&mut l, 1, n).unwrap();
        }
        open(&mut l, 2, 10).unwrap();
        open(&mut l, 2, 11).unwrap();
        assert_eq!(l.total, 5);
        // Route 2 is under its cap, the total is not: route 1's oldest idle session goes.
        assert_eq!(open(&mut l, 2, 12), Ok(vec![id(0)]));
        assert_eq!((l.on_route(1), l.on_route(2), l.total), (2, 3, 5));
        // Route 2 at its cap and the total at its cap: one of route 2's own goes.
        assert_eq!(open(&mut l, 2, 13), Ok(vec![id(10)]));
        assert_eq!(l.sessions.len(), 5);
    }

    #[test]
    fn admissions_in_progress_count_and_removal_and_forgetting_uncount() {
        let mut l = Ledger::default();
        for _ in 0..3 {
            l.admit(1, LIMITS).unwrap();
        }
        assert_eq!(l.admit(1, LIMITS), Err(Full), "three admissions in progress, none evictable");
        l.cancel(1);
        open(&mut l, 1, 0).unwrap();
        assert!(l.remove(&id(0)));
        assert!(!l.remove(&id(0)));
        assert_eq!(l.on_route(1), 2);
        l.insert(1, id(1));
        l.insert(1, id(2));
        l.forget_route(1);
        assert_eq!((l.on_route(1), l.total, l.sessions.len()), (0, 0, 0));
    }
}
