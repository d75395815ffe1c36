//! OpenAI-shaped errors: `{"error":{"message","type","code"}}` with their HTTP status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use toolstream_schemas::openai::{ErrorBody, ErrorDetail};

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
