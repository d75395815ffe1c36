//! OpenAI-shaped errors: `{"error":{"message","type","code"}}` with their HTTP status, for every
//! refusal (the request guard's 403 and 415, 401, 404, 405, 413, 429) and failure.

use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use toolstream_schemas::openai::{ErrorBody, ErrorDetail};

use crate::local_http::Refusal;

/// A request the server refuses or could not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>, code: &'static str) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            code: Some(code),
        }
    }

    pub fn unauthorized() -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: "Incorrect API key provided: send `Authorization: Bearer <key>` with the server's key".into(),
            kind: "invalid_request_error",
            code: Some("invalid_api_key"),
        }
    }

    pub fn model_not_found(model: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("The model `{model}` does not exist: GET /v1/models lists the models served"),
            kind: "invalid_request_error",
            code: Some("model_not_found"),
        }
    }

    pub fn not_found() -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: "Unknown URL".into(),
            kind: "invalid_request_error",
            code: None,
        }
    }

    pub fn method_not_allowed() -> ApiError {
        ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            message: "This URL does not take this method: POST /v1/chat/completions, GET /v1/models".into(),
            kind: "invalid_request_error",
            code: Some("method_not_allowed"),
        }
    }

    /// The body could not be read: past `--max-body` (413), or cut short.
    pub fn unreadable_body(rejection: &BytesRejection, limit: usize) -> ApiError {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                message: format!("The request body is larger than this server takes ({limit} bytes, `--max-body`)"),
                kind: "invalid_request_error",
                code: Some("request_too_large"),
            }
        } else {
            ApiError::bad_request(format!("We could not read the body of your request: {rejection}"), "invalid_body")
        }
    }

    /// A request the guard refused before any route (`crate::local_http::guard`).
    pub fn refused(r: Refusal) -> ApiError {
        let (message, code) = match r {
            Refusal::Host => (r.message().to_owned(), "host_not_allowed"),
            Refusal::Origin => (
                format!("{}: a page of another site cannot drive this server (allow an origin with `--allow-origin ORIGIN`)", r.message()),
                "origin_not_allowed",
            ),
            Refusal::ContentType => (r.message().to_owned(), "unsupported_content_type"),
        };
        ApiError { status: r.status(), message, kind: "invalid_request_error", code: Some(code) }
    }

    pub fn busy(limit: usize) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("{limit} runs are already in progress: retry later"),
            kind: "rate_limit_error",
            code: Some("too_many_runs"),
        }
    }

    pub fn server(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            code: None,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                message: self.message.clone(),
                kind: self.kind.into(),
                code: self.code.map(Into::into),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}
