//! `toolstream serve openai`: an OpenAI-compatible chat completions API in front of Cursor (SPEC
//! §9.5, seed 002), axum on a tokio runtime the engine owns. `POST /v1/chat/completions`
//! (streamed `chat.completion.chunk` SSE or one `chat.completion`) and `GET /v1/models`.
//!
//! A request is served either from a recording (`--replay`, [`replay`]) or by a Cursor run
//! through cursor-agent with the conversation flattened into the prompt ([`live`]). A live run
//! that called one of the request's `tools` (through the tool bridge) ends the response with that
//! call and waits in [`pending`], keyed by tool_call_id; the client's next request answering it
//! continues the same run, and one answering a call whose run is gone starts a fresh run. Every
//! request is bounded: the body size, a deadline per request, and the number of runs at once (more
//! are refused with 429; a waiting run keeps its slot until it ends or its wait expires). Bad
//! requests get OpenAI-shaped errors ([`error`]) and touch nothing else. Before any route, the
//! request guard ([`crate::local_http::guard`]) refuses what a web page could send: a foreign
//! `Host` (DNS rebinding), a browser `Origin` not allowed by `--allow-origin`, a non-JSON POST.

pub mod api_key;
pub mod error;
pub mod live;
pub mod pending;
pub mod replay;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use toolstream_schemas::models::{normalize_model_id, ModelTable};
use toolstream_schemas::openai::{ChatMessage, ChatRequest, ModelEntry, ModelList};
use toolstream_sinks::openai::{assemble, Naming, SseEvent};

use crate::conversation::openai::split_request;
use crate::local_http::{self, AllowedOrigins, Guard};
use error::ApiError;
use live::{LiveOptions, LiveRun};
use pending::Pending;
use replay::Recording;

/// The address served unless `--addr` says otherwise (seed 002's port, loopback only).
pub const DEFAULT_ADDR: &str = "127.0.0.1:18741";
/// The model id that lets Cursor choose.
pub const AUTO_MODEL: &str = "auto";

/// Where responses come from.
pub enum Mode {
    Replay(Arc<Recording>),
    Live(Box<LiveOptions>),
}

/// How the server runs.
pub struct ServerOptions {
    pub addr: SocketAddr,
    /// The bearer key every request must carry, when set.
    pub api_key: Option<String>,
    /// The browser origins allowed to call the server (`--allow-origin`); every other `Origin` is
    /// refused ([`crate::local_http::guard`]).
    pub allowed_origins: AllowedOrigins,
    pub mode: Mode,
    /// Runs at once; more are refused with 429.
    pub max_runs: usize,
    /// Deadline of one request, from its arrival to its last byte.
    pub request_timeout: Duration,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// How long a live run waits for the client's result of a tool call it made; then it is
    /// stopped (and the client's late result starts a fresh run).
    pub tool_result_timeout: Duration,
}

/// The runs waiting on client tool calls.
type Waiting = Arc<Mutex<Pending<Arc<LiveRun>>>>;

struct AppState {
    api_key: Option<String>,
    body_limit: usize,
    mode: Mode,
    max_runs: usize,
    runs: Arc<Semaphore>,
    request_timeout: Duration,
    /// Model ids served (`GET /v1/models`), normalized for lookup.
    models: Vec<String>,
    pending: Waiting,
}

/// The model ids served: the known Cursor models (`schemas/models.json`) and `auto`.
pub fn model_ids() -> Vec<String> {
    let mut ids: Vec<String> = vec![AUTO_MODEL.to_owned()];
    ids.extend(ModelTable::default().entries().map(|(id, _)| id.to_owned()).filter(|id| id != AUTO_MODEL));
    ids
}

/// The routes, for [`serve`] and tests.
pub fn router(opts: ServerOptions) -> Router {
    let guard = Arc::new(Guard {
        bound: opts.addr.ip(),
        origins: opts.allowed_origins,
        methods: "GET, POST",
        render: |r| ApiError::refused(r).into_response(),
    });
    let state = Arc::new(AppState {
        api_key: opts.api_key.filter(|k| !k.is_empty()),
        body_limit: opts.body_limit,
        runs: Arc::new(Semaphore::new(opts.max_runs.max(1))),
        max_runs: opts.max_runs.max(1),
        mode: opts.mode,
        request_timeout: opts.request_timeout,
        models: model_ids(),
        // Each waiting run holds one of the slots; a run may wait on a few calls at once.
        pending: Arc::new(Mutex::new(Pending::new(opts.max_runs.max(1) * 8, opts.tool_result_timeout))),
    });
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(sweep(state.pending.clone()));
    }
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(DefaultBodyLimit::max(opts.body_limit))
        .layer(axum::middleware::from_fn_with_state(guard, local_http::guard::guard))
        .with_state(state)
}

/// Bind and serve until the process is stopped; says where on stderr.
pub fn serve(opts: ServerOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    tracing::debug!(
        max_runs = opts.max_runs,
        request_timeout_s = opts.request_timeout.as_secs(),
        tool_result_timeout_s = opts.tool_result_timeout.as_secs(),
        body_limit = opts.body_limit,
        "serve openai: limits"
    );
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(opts.addr).await?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            tracing::warn!("serving on {addr}, which is not a loopback address: other machines can reach it");
        }
        toolstream_engine::say!("toolstream: serving OpenAI chat completions on http://{addr}/v1");
        axum::serve(listener, router(opts)).await?;
        Ok(())
    })
}

/// Stop the runs that waited too long for a tool result, every second, for as long as the server
/// lives (requests do it too).
async fn sweep(pending: Waiting) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        stop_expired(&pending);
    }
}

fn stop_expired(pending: &Waiting) {
    let expired = pending.lock().unwrap_or_else(PoisonError::into_inner).expire(Instant::now());
    for run in expired {
        tracing::info!("a run waited too long for the client's tool result: stopped");
        run.stop();
    }
}

/// The live run waiting on the calls this request answers, if any.
fn waiting_run(pending: &Waiting, answered: &[(String, String)]) -> Option<Arc<LiveRun>> {
    let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
    let mut found = None;
    for (id, _) in answered {
        if let Some(run) = pending.take(id) {
            found.get_or_insert(run);
        }
    }
    found
}

fn check_key(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(key) = &state.api_key else { return Ok(()) };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    // Compare without stopping at the first difference.
    let same = given.is_some_and(|g| {
        g.len() == key.len() && g.bytes().zip(key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    });
    if same {
        Ok(())
    } else {
        Err(ApiError::unauthorized())
    }
}

async fn models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Result<Json<ModelList>, ApiError> {
    check_key(&state, &headers)?;
    let data = state
        .models
        .iter()
        .map(|id| ModelEntry { id: id.clone(), object: "model", created: 0, owned_by: "cursor" })
        .collect();
    Ok(Json(ModelList { object: "list", data }))
}

async fn chat(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => return ApiError::unreadable_body(&rejection, state.body_limit).into_response(),
    };
    match respond(&state, &headers, &body).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(status = %e.status, "refused: {}", e.message);
            e.into_response()
        }
    }
}

async fn respond(state: &Arc<AppState>, headers: &HeaderMap, body: &[u8]) -> Result<Response, ApiError> {
    check_key(state, headers)?;
    let req: ChatRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("We could not parse the JSON body of your request: {e}"), "invalid_json")
    })?;
    if req.messages.is_empty() {
        return Err(ApiError::bad_request("`messages` must hold at least one message", "invalid_messages"));
    }
    let model = req.model.clone().filter(|m| !m.trim().is_empty()).unwrap_or_else(|| AUTO_MODEL.into());
    let wanted = normalize_model_id(&model);
    if !state.models.iter().any(|m| normalize_model_id(m) == wanted) {
        return Err(ApiError::model_not_found(&model));
    }
    let answered = answered_calls(&req.messages)?;
    let deadline = tokio::time::Instant::now() + state.request_timeout;
    let naming = Naming { id: Some(completion_id()), created: Some(now_secs()), model: Some(model.clone()) };
    let (tx, rx) = mpsc::channel::<SseEvent>(256);
    let acquire = || state.runs.clone().try_acquire_owned().map_err(|_| ApiError::busy(state.max_runs));
    let mut guard = RunGuard { run: None, finished: false, pending: state.pending.clone(), _permit: None };
    match &state.mode {
        Mode::Replay(rec) => {
            guard._permit = Some(acquire()?);
            let events = rec.next(&answered).map_err(|m| ApiError::bad_request(m, "invalid_tool_call_id"))?;
            let (events, tx) = (renamed(events, &naming), tx.clone());
            tokio::spawn(async move {
                for e in events {
                    if tx.send(e).await.is_err() {
                        break;
                    }
                }
            });
        }
        Mode::Live(opts) => {
            stop_expired(&state.pending);
            if let Some(run) = waiting_run(&state.pending, &answered) {
                // The client answered a call a live run is waiting on: that run goes on here.
                tracing::debug!(results = answered.len(), "continuing the run that waits on these calls");
                run.resume(answered, live::Response { tx: tx.clone(), naming });
                guard.run = Some(run);
            } else {
                // A fresh run with the whole conversation: the first request, or the run that
                // made these calls is gone (deadline, restart): seed 002's flow.
                let permit = acquire()?;
                let (history, request) = split_request(&req.messages).ok_or_else(|| {
                    ApiError::bad_request("the conversation holds no user message with text", "invalid_messages")
                })?;
                let run_req = live::RunRequest {
                    model: (model != AUTO_MODEL).then(|| model.clone()),
                    history: &history,
                    request: &request,
                    tools: &req.tools,
                };
                let response = live::Response { tx: tx.clone(), naming };
                let run = live::start(opts, run_req, permit, response).map_err(ApiError::server)?;
                guard.run = Some(Arc::new(run));
            }
        }
    }
    drop(tx);
    if req.stream {
        Ok(stream_response(rx, guard, deadline))
    } else {
        collect_response(rx, guard, deadline).await
    }
}

/// The trailing `role:"tool"` messages (the calls this request answers) as (id, text). Every
/// `tool` message must answer a call an earlier assistant message made.
fn answered_calls(messages: &[ChatMessage]) -> Result<Vec<(String, String)>, ApiError> {
    let mut made: Vec<&str> = Vec::new();
    for m in messages {
        made.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
        if m.role == "tool" {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            if !made.contains(&id) {
                return Err(ApiError::bad_request(
                    format!(
                        "a `tool` message's tool_call_id `{id}` matches no tool call of an earlier assistant message"
                    ),
                    "invalid_tool_call_id",
                ));
            }
        }
    }
    let trailing = messages.iter().rev().take_while(|m| m.role == "tool").count();
    Ok(messages[messages.len() - trailing..]
        .iter()
        .map(|m| (m.tool_call_id.clone().unwrap_or_default(), m.text()))
        .collect())
}

/// A run in progress: stopped when its response is dropped before its end (client gone,
/// deadline); registered as waiting when its response ends with client tool calls. A replayed
/// response holds its slot among the runs at once here (a live run holds its own).
struct RunGuard {
    run: Option<Arc<LiveRun>>,
    finished: bool,
    pending: Waiting,
    _permit: Option<OwnedSemaphorePermit>,
}

impl RunGuard {
    /// The response's `Done`: a live run that ended it with tool calls waits for their results
    /// (registered before the client can see `[DONE]` and answer).
    fn done(&mut self, tool_call_ids: &[String]) {
        self.finished = true;
        if let (Some(run), false) = (&self.run, tool_call_ids.is_empty()) {
            let out =
                self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(tool_call_ids, run, Instant::now());
            for run in out {
                tracing::warn!("too many runs wait for tool results: the oldest is stopped");
                run.stop();
            }
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let (false, Some(run)) = (self.finished, &self.run) {
            run.stop();
        }
    }
}

fn timeout_events() -> [SseEvent; 2] {
    let body = ApiError {
        status: StatusCode::GATEWAY_TIMEOUT,
        message: "the request's deadline passed before the run ended".into(),
        kind: "timeout",
        code: Some("timeout"),
    }
    .body();
    [SseEvent::Error(body), SseEvent::Done { tool_call_ids: Vec::new() }]
}

fn stream_response(rx: mpsc::Receiver<SseEvent>, guard: RunGuard, deadline: tokio::time::Instant) -> Response {
    // (receiver, run, an event still to send, the response is over)
    let state = (rx, guard, None::<SseEvent>, false);
    let stream = futures::stream::unfold(state, move |(mut rx, mut guard, pending, over)| async move {
        if let Some(e) = pending {
            return Some((Ok::<_, Infallible>(e.to_sse()), (rx, guard, None, true)));
        }
        if over {
            return None;
        }
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(e)) => {
                let done = matches!(e, SseEvent::Done { .. });
                if let SseEvent::Done { tool_call_ids } = &e {
                    guard.done(tool_call_ids);
                }
                Some((Ok(e.to_sse()), (rx, guard, None, done)))
            }
            Ok(None) => None,
            // The deadline: an error event then `[DONE]`; dropping the guard stops the run.
            Err(_) => {
                let [err, done] = timeout_events();
                Some((Ok(err.to_sse()), (rx, guard, Some(done), false)))
            }
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| ApiError::server("cannot build the response").into_response())
}

async fn collect_response(
    mut rx: mpsc::Receiver<SseEvent>,
    mut guard: RunGuard,
    deadline: tokio::time::Instant,
) -> Result<Response, ApiError> {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(e)) => {
                if let SseEvent::Done { tool_call_ids } = &e {
                    guard.done(tool_call_ids);
                    events.push(e);
                    break;
                }
                events.push(e);
            }
            Ok(None) => break,
            Err(_) => {
                let [SseEvent::Error(body), _] = timeout_events() else { break };
                return Ok((StatusCode::GATEWAY_TIMEOUT, Json(body)).into_response());
            }
        }
    }
    match assemble(&events) {
        Ok(c) => Ok(Json(c).into_response()),
        Err(body) => Ok((StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()),
    }
}

/// Recorded events under this request's id, time and model.
fn renamed(events: &[SseEvent], naming: &Naming) -> Vec<SseEvent> {
    events.iter().map(|e| rename(e.clone(), naming)).collect()
}

/// An event under this response's id, time and model.
fn rename(e: SseEvent, naming: &Naming) -> SseEvent {
    match e {
        SseEvent::Chunk(mut c) => {
            if let Some(id) = &naming.id {
                c.id.clone_from(id);
            }
            c.created = naming.created.unwrap_or(c.created);
            if let Some(m) = &naming.model {
                c.model.clone_from(m);
            }
            SseEvent::Chunk(c)
        }
        other => other,
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `chatcmpl-<time and counter in hex>`: unique within the process, never a secret.
fn completion_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("chatcmpl-{:x}{nanos:08x}{n:04x}", now_secs())
}
