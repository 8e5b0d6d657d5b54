//! Routes of the proxy.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tower_http::services::{ServeDir, ServeFile};

use crate::Settings;

pub fn router(settings: Settings) -> Router {
    let index = settings.static_dir.join("index.html");
    Router::new()
        .route("/api/health", get(health))
        .route("/api/chat", post(chat_unconfigured))
        .route("/v1/chat/completions", post(chat_unconfigured))
        .fallback_service(ServeDir::new(&settings.static_dir).fallback(ServeFile::new(index)))
}

async fn health() -> Json<serde_json::Value> {
    Json(
        json!({ "status": "ok", "upstream": { "configured": false }, "version": env!("CARGO_PKG_VERSION") }),
    )
}

async fn chat_unconfigured() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({
            "error": {
                "type": "upstream_not_configured",
                "message": "No LLM is configured on this proxy: this build serves the app and its offline features only."
            }
        })),
    )
        .into_response()
}
