//! The request guard of the local servers (`serve openai`, the pi tool bridge), an axum middleware
//! that runs before any route: a web page the user visits must not reach a handler.
//!
//! In order: the `Host` must be a loopback name or the bound address ([`super::host`], against DNS
//! rebinding) → 403; an `Origin` header (browsers send it on cross-site requests) must be on the
//! server's allow-list ([`AllowedOrigins`]; `null` never is) → 403, while a request without one (a
//! non-browser client) goes on; a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`)
//! from an allowed origin is answered here with the `Access-Control-Allow-*` headers; a `POST` must
//! say `Content-Type: application/json` (a page can send `text/plain` cross-site without a
//! preflight) → 415. Responses to an allowed origin carry `Access-Control-Allow-Origin`. Each
//! server renders a refusal in its own error shape (OpenAI's, JSON-RPC's).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, CONTENT_TYPE, HOST, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::host::host_allowed;
use super::origin::AllowedOrigins;

/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// Why a request was refused before reaching the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` is not a loopback name or the bound address (or is missing).
    Host,
    /// A browser `Origin` that is not allowed (or `null`, or malformed).
    Origin,
    /// A `POST` whose body is not declared `application/json`.
    ContentType,
}

impl Refusal {
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::Host | Refusal::Origin => StatusCode::FORBIDDEN,
            Refusal::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => {
                "The Host header is neither a loopback name nor the address this server listens on \
                 (a DNS-rebinding request is refused)"
            }
            Refusal::Origin => "Requests from this browser origin are not allowed",
            Refusal::ContentType => "A POST body must be sent with `Content-Type: application/json`",
        }
    }
}

/// What the guard decides for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it; `cors` holds the (allowed) origin when a browser sent it.
    Pass {
        cors: Option<HeaderValue>,
    },
    /// A CORS preflight from an allowed origin: answered by the guard.
    Preflight {
        origin: HeaderValue,
    },
    Refuse(Refusal),
}

/// One server's rules.
#[derive(Debug)]
pub struct Guard {
    /// The address the server is bound to (its port is not compared).
    pub bound: IpAddr,
    pub origins: AllowedOrigins,
    /// The methods a preflight may be told about (`Access-Control-Allow-Methods`).
    pub methods: &'static str,
    /// The server's error shape.
    pub render: fn(Refusal) -> Response,
}

/// Whether a `Content-Type` value is JSON (`application/json`, parameters allowed).
fn is_json(value: Option<&HeaderValue>) -> bool {
    value.and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split(';').next().unwrap_or_default();
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

impl Guard {
    /// The decision for a request (pure: no I/O).
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Verdict {
        let host = match headers.get(HOST) {
            Some(v) => v.to_str().ok(),
            None => uri.authority().map(|a| a.as_str()),
        };
        if !host.is_some_and(|h| host_allowed(h, self.bound)) {
            return Verdict::Refuse(Refusal::Host);
        }
        let origin = match headers.get(ORIGIN) {
            None => None,
            Some(v) if v.to_str().is_ok_and(|o| self.origins.allows(o)) => Some(v.clone()),
            Some(_) => return Verdict::Refuse(Refusal::Origin),
        };
        if let (true, Some(origin)) =
            (method == Method::OPTIONS && headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD), &origin)
        {
            return Verdict::Preflight { origin: origin.clone() };
        }
        if method == Method::POST && !is_json(headers.get(CONTENT_TYPE)) {
            return Verdict::Refuse(Refusal::ContentType);
        }
        Verdict::Pass { cors: origin }
    }

    fn preflight(&self, origin: HeaderValue, headers: &HeaderMap) -> Response {
        let mut resp = StatusCode::NO_CONTENT.into_response();
        let h = resp.headers_mut();
        h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(self.methods));
        // The origin is trusted by the user: whatever headers its client sends (the `openai` JS
        // SDK sends `authorization`, `content-type` and its own `x-stainless-*`).
        if let Some(asked) = headers.get(ACCESS_CONTROL_REQUEST_HEADERS) {
            h.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(PREFLIGHT_MAX_AGE));
        h.append(VARY, HeaderValue::from_static("Origin"));
        resp
    }
}

/// The middleware: `axum::middleware::from_fn_with_state(Arc<Guard>, guard)`.
pub async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    match g.check(req.method(), req.uri(), req.headers()) {
        Verdict::Refuse(r) => {
            tracing::debug!(method = %req.method(), "refused: {}", r.message());
            (g.render)(r)
        }
        Verdict::Preflight { origin } => g.preflight(origin, req.headers()),
        Verdict::Pass { cors } => {
            let mut resp = next.run(req).await;
            if let Some(origin) = cors {
                resp.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                resp.headers_mut().append(VARY, HeaderValue::from_static("Origin"));
            }
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn guard(origins: &str) -> Guard {
        Guard {
            bound: "127.0.0.1".parse().unwrap(),
            origins: AllowedOrigins::parse(origins).unwrap(),
            methods: "GET, POST",
            render: |r| r.status().into_response(),
        }
    }

    fn check(g: &Guard, method: Method, headers: &[(&str, &str)]) -> Verdict {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        g.check(&method, &Uri::from_static("/v1/chat/completions"), &map)
    }

    const JSON: (&str, &str) = ("content-type", "application/json");
    const HOST_OK: (&str, &str) = ("host", "127.0.0.1:18741");

    #[test]
    fn the_cross_site_recipe_is_refused_at_every_step() {
        let g = guard("");
        let recipe =
            [("host", "evil.example:18741"), ("origin", "http://evil.example"), ("content-type", "text/plain")];
        assert_eq!(check(&g, Method::POST, &recipe), Verdict::Refuse(Refusal::Host));
        assert_eq!(check(&g, Method::POST, &recipe[1..]), Verdict::Refuse(Refusal::Host), "no Host at all");
        assert_eq!(check(&g, Method::POST, &[HOST_OK, recipe[1], JSON]), Verdict::Refuse(Refusal::Origin));
        assert_eq!(check(&g, Method::POST, &[HOST_OK, ("origin", "null"), JSON]), Verdict::Refuse(Refusal::Origin));
        assert_eq!(check(&g, Method::POST, &[HOST_OK, recipe[2]]), Verdict::Refuse(Refusal::ContentType));
        assert_eq!(check(&g, Method::POST, &[HOST_OK]), Verdict::Refuse(Refusal::ContentType));
        let preflight = [HOST_OK, recipe[1], ("access-control-request-method", "POST")];
        assert_eq!(check(&g, Method::OPTIONS, &preflight), Verdict::Refuse(Refusal::Origin));
    }

    #[test]
    fn plain_clients_and_allowed_origins_pass() {
        let g = guard("http://localhost:5173");
        assert_eq!(check(&g, Method::POST, &[HOST_OK, JSON]), Verdict::Pass { cors: None });
        assert_eq!(
            check(&g, Method::POST, &[HOST_OK, ("content-type", "Application/JSON; charset=utf-8")]),
            Verdict::Pass { cors: None }
        );
        assert_eq!(check(&g, Method::GET, &[("host", "localhost:18741")]), Verdict::Pass { cors: None });
        let origin = HeaderValue::from_static("http://localhost:5173");
        assert_eq!(
            check(&g, Method::POST, &[HOST_OK, ("origin", "http://localhost:5173"), JSON]),
            Verdict::Pass { cors: Some(origin.clone()) }
        );
        let preflight = [HOST_OK, ("origin", "http://localhost:5173"), ("access-control-request-method", "POST")];
        assert_eq!(check(&g, Method::OPTIONS, &preflight), Verdict::Preflight { origin });
        assert_eq!(
            check(&g, Method::POST, &[HOST_OK, ("origin", "http://localhost:5174"), JSON]),
            Verdict::Refuse(Refusal::Origin)
        );
    }

    #[test]
    fn a_preflight_answer_names_the_origin_methods_and_asked_headers() {
        let g = guard("http://localhost:5173");
        let mut asked = HeaderMap::new();
        asked.insert(ACCESS_CONTROL_REQUEST_HEADERS, HeaderValue::from_static("authorization, content-type"));
        let resp = g.preflight(HeaderValue::from_static("http://localhost:5173"), &asked);
        assert_eq!(resp.status(), StatusCode::NO_CONTENT);
        let h = resp.headers();
        assert_eq!(h[ACCESS_CONTROL_ALLOW_ORIGIN], "http://localhost:5173");
        assert_eq!(h[ACCESS_CONTROL_ALLOW_METHODS], "GET, POST");
        assert_eq!(h[ACCESS_CONTROL_ALLOW_HEADERS], "authorization, content-type");
        assert_eq!(h[VARY], "Origin");
    }
}
