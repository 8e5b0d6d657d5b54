//! The proxy's routes (the shared state is in `state.rs`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{header, HeaderValue, Method};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use serde_json::{json, Value};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};
use tower_http::services::{ServeDir, ServeFile};

use crate::state::{AppState, State};
use crate::upstream::{describe_models, redact_url};
use crate::{chat, embeddings, gate, limit, log, mcp, web};

pub fn router(State(state): State) -> Router {
    let api = Router::new()
        .route("/api/chat", post(chat::completions))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/api/embeddings", post(embeddings::embeddings))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/api/tools/web-search", post(web::search))
        .route("/api/tools/open-url", post(web::open_url))
        .route("/api/mcp/{*server}", post(mcp::relay::relay).get(mcp::relay::relay).delete(mcp::relay::relay))
        .route_layer(middleware::from_fn_with_state(state.clone(), limit::guard))
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(state.body_limit));
    let api = match cors(&state.allowed_origins) {
        Some(layer) => api.layer(layer),
        None => api,
    };
    let index = state.static_dir.join("index.html");
    api.fallback_service(ServeDir::new(&state.static_dir).fallback(ServeFile::new(index)))
        .layer(middleware::from_fn_with_state(state.clone(), gate::check))
        .layer(middleware::from_fn(log::requests))
        .with_state(state)
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
            // The MCP relay's clients send `Mcp-*` headers with open-ended
            // names (`Mcp-Param-<name>`); the origin is already on the list,
            // and every handler forwards only the headers it knows.
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers([
                header::RETRY_AFTER,
                header::HeaderName::from_static("mcp-session-id"),
                header::HeaderName::from_static("mcp-protocol-version"),
            ])
            .max_age(Duration::from_secs(600)),
    )
}

async fn health(AxumState(state): AxumState<Arc<AppState>>) -> Json<Value> {
    let mut upstream = None;
    if let Some(u) = state.upstreams.current() {
        let (available, chosen) = describe_models(&state.http, &u).await;
        let (main, sub) = chosen.map_or((None, None), |(m, s)| (Some(m), Some(s)));
        // What "embed" stands for: the setting, else the first embedding model listed.
        let embed = u.model_embed.clone().or_else(|| crate::discovery::pick_embedding(&available));
        upstream = Some(json!({
            "url": u.display_base(),
            "source": u.source,
            "detected": u.detected(),
            "models": { "main": main, "sub": sub, "embed": embed, "available": available },
        }));
    }
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "chat": { "configured": upstream.is_some(), "upstream": upstream },
        "search": { "configured": state.search_url.is_some(), "url": state.search_url.as_deref().map(redact_url) },
        "clientTokenRequired": state.client_token.is_some(),
        "mcp": state.mcp.health().await,
    }))
}
