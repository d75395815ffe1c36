//! The bridge's HTTP front, before rmcp's Streamable HTTP service: the shared request guard
//! ([`crate::local_http::guard`]: Host, Origin — the Streamable HTTP spec's MUST; no browser origin
//! is ever allowed here — and JSON POSTs), the peer and route checks (SPEC §7: 403, 404, 410), then
//! what rmcp answers other than the spec and the official SDKs expect:
//! - a body that is not JSON → 400 with JSON-RPC `-32700`, JSON that is not a JSON-RPC message →
//!   400 with `-32600` (rmcp: 415), a body past [`MAX_BODY_BYTES`] → 413;
//! - a new session past the caps with every session busy → 503 ([`super::sessions`]);
//! - `DELETE` of a session → 200 (rmcp: 202, which the Python SDK logs as a failed termination; its
//!   own server answers 200), of an unknown one → 404.
//!
//! Every refusal here is a JSON-RPC error body (`id` null unless known) with its HTTP status.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::{FutureExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use serde_json::{json, Value};

use super::hub::{Hub, LiveRoute, McpService};
use super::routes::Lookup;
use super::settings::MAX_BODY_BYTES;
use crate::local_http::{self, AllowedOrigins, Guard};

/// JSON-RPC's "server error" range: refusals of the transport.
const TRANSPORT_REFUSED: ErrorCode = ErrorCode(-32000);

/// The bridge's axum app.
pub(super) fn app(hub: Arc<Hub>, listen: IpAddr) -> axum::Router {
    let guard = Arc::new(Guard {
        bound: listen,
        origins: AllowedOrigins::none(),
        methods: "GET, POST, DELETE",
        render: |r| refusal(r.status(), r.message()),
    });
    axum::Router::new()
        .fallback(route_request)
        .layer(axum::middleware::from_fn_with_state(guard, local_http::guard::guard))
        .with_state(hub)
}

/// A JSON-RPC error body with an HTTP status. Its `id` is `null` unless known: JSON-RPC 2.0
/// requires the member (the official Python SDK ignores an error body without it; rmcp's own
/// `JsonRpcError` leaves it out).
fn jsonrpc_error(status: StatusCode, error: ErrorData, id: Option<RequestId>) -> Response {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": error})).unwrap_or_default();
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn refusal(status: StatusCode, message: &'static str) -> Response {
    jsonrpc_error(status, ErrorData::new(TRANSPORT_REFUSED, message, None), None)
}

/// Every request: peer and path checks, the checks rmcp does otherwise, then the run's MCP service.
async fn route_request(
    State(hub): State<Arc<Hub>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    let route = match hub.lookup(peer.ip(), req.uri().path()) {
        Some(Lookup::Live(route)) if !route.closed.is_cancelled() => route,
        Some(Lookup::Live(_) | Lookup::Gone) => return refusal(StatusCode::GONE, "pi bridge run disposed"),
        Some(Lookup::Forbidden) => return refusal(StatusCode::FORBIDDEN, "pi bridge: only loopback peers are served"),
        Some(Lookup::NotFound) => return refusal(StatusCode::NOT_FOUND, "not found"),
        None => return refusal(StatusCode::INTERNAL_SERVER_ERROR, "pi bridge route registry unavailable"),
    };
    let req = match precheck(&hub, &route, req).await {
        Ok(req) => req,
        Err(resp) => return resp,
    };
    let delete = req.method() == Method::DELETE;
    let mut service = route.service;
    let call = std::panic::AssertUnwindSafe(tower_call(&mut service, req)).catch_unwind();
    let mut resp = match call.await {
        Ok(resp) => resp,
        Err(_) => return refusal(StatusCode::INTERNAL_SERVER_ERROR, "pi bridge handler failed"),
    };
    if delete && resp.status() == StatusCode::ACCEPTED {
        *resp.status_mut() = StatusCode::OK;
    }
    resp
}

/// What the bridge answers before rmcp: malformed bodies, sessions past the caps, `DELETE` of an
/// unknown session. A POST's body is read here (bounded) and handed on whole.
async fn precheck(hub: &Hub, route: &LiveRoute, req: Request) -> Result<Request, Response> {
    let session = req.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    match *req.method() {
        Method::POST => {
            let (parts, body) = req.into_parts();
            let bytes = read_body(body).await?;
            let message: ClientJsonRpcMessage = serde_json::from_slice(&bytes).map_err(|e| undecodable(&bytes, &e))?;
            let initialize = matches!(
                &message,
                JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_))
            );
            if initialize && session.is_none() && !hub.sessions.can_admit(route.id) {
                return Err(refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "every MCP session of this pi bridge run is in use: retry when one ends",
                ));
            }
            Ok(Request::from_parts(parts, Body::from(bytes)))
        }
        Method::DELETE => match session {
            Some(id) if !hub.sessions.contains(route.id, &id) => {
                Err(refusal(StatusCode::NOT_FOUND, "Not Found: Session not found"))
            }
            _ => Ok(req),
        },
        _ => Ok(req),
    }
}

/// The whole body, at most [`MAX_BODY_BYTES`] (413 past it).
async fn read_body(body: Body) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| refusal(StatusCode::BAD_REQUEST, "the request body could not be read"))?;
        if buf.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, "the request body is larger than 4 MiB"));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// A body rmcp could not take: not JSON (`-32700`), or JSON that is no JSON-RPC message (`-32600`,
/// with the request's id when it has one).
fn undecodable(bytes: &[u8], e: &serde_json::Error) -> Response {
    if e.is_syntax() || e.is_eof() {
        return jsonrpc_error(StatusCode::BAD_REQUEST, ErrorData::parse_error(format!("Parse error: {e}"), None), None);
    }
    let id = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
    jsonrpc_error(StatusCode::BAD_REQUEST, ErrorData::invalid_request(format!("Invalid Request: {e}"), None), id)
}

async fn tower_call(service: &mut McpService, req: Request) -> Response {
    use tower_service::Service;
    match service.call(req).await {
        Ok(resp) => resp.map(Body::new),
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    async fn body_json(resp: Response) -> Value {
        let bytes = read_body(resp.into_body()).await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn malformed_json_is_a_parse_error_and_other_json_an_invalid_request() {
        let e = serde_json::from_slice::<ClientJsonRpcMessage>(b"{not json").unwrap_err();
        let resp = undecodable(b"{not json", &e);
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let body = body_json(resp).await;
        assert_eq!(body["error"]["code"], -32700, "{body}");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body.get("id"), Some(&Value::Null), "JSON-RPC 2.0: present, null");

        let odd = br#"{"jsonrpc":"2.0","id":7,"params":{}}"#;
        let e = serde_json::from_slice::<ClientJsonRpcMessage>(odd).unwrap_err();
        let body = body_json(undecodable(odd, &e)).await;
        assert_eq!((body["error"]["code"].as_i64(), body["id"].as_i64()), (Some(-32600), Some(7)), "{body}");
    }
}
