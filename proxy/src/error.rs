//! Errors the proxy answers with: JSON `{"error": {"type", "message", ...}}`
//! and a status that says what happened. Messages never carry a key.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error response of the proxy.
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ProxyError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// Status the upstream answered, when the error comes from it.
    pub upstream_status: Option<u16>,
    /// Seconds to wait before retrying (429).
    pub retry_after: Option<HeaderValue>,
}

impl ProxyError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ProxyError {
        ProxyError { status, kind, message: message.into(), upstream_status: None, retry_after: None }
    }

    pub fn bad_request(message: impl Into<String>) -> ProxyError {
        ProxyError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": { "type": self.kind, "message": self.message } });
        if let Some(status) = self.upstream_status {
            body["error"]["upstream_status"] = json!(status);
        }
        let mut response = (self.status, Json(body)).into_response();
        if let Some(retry) = self.retry_after {
            response.headers_mut().insert("retry-after", retry);
        }
        response
    }
}
