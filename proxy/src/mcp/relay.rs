//! The relay handler, `POST`/`GET`/`DELETE /api/mcp/<name>`.
//!
//! The request goes to the URL configured for `<name>`, exactly: the path
//! must be `/api/mcp/<name>` and nothing more, and a query string is refused,
//! so nothing the browser sends changes where it goes. Only the transport's
//! own headers cross to the server (`Accept`, `Content-Type`,
//! `Last-Event-ID` and every `Mcp-*` header: `Mcp-Session-Id`,
//! `MCP-Protocol-Version`, and the `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*`
//! headers of newer protocol revisions), plus the server's own bearer token;
//! never the browser's `Authorization` (its client token), cookies, `Origin`
//! or anything else. Back to the browser go the status, `Content-Type`,
//! `Retry-After` and `Mcp-*` headers and the body, with the server's secrets
//! cut out; never `Set-Cookie`, `WWW-Authenticate` or `Location`.
//!
//! Answers that are not the MCP server's own word become the proxy's coded
//! errors: a redirect (never followed) is `502 mcp_redirect`, a 401/403 to
//! the proxy's token is `502 mcp_auth` (a 401 would read as the proxy's own
//! client-token check), a server that cannot be reached is
//! `502 mcp_unreachable` or `504 mcp_timeout`. Every other status (a 404 for
//! an expired session, a 405 for no standalone stream, a JSON-RPC error) is
//! passed as it is.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::reach::Reach;
use super::stream::{relayed, Pace};
use super::{McpServer, McpServers};
use crate::error::ProxyError;
use crate::log::UpstreamLatency;
use crate::state::AppState;

/// The route's path before the server name.
pub const PREFIX: &str = "/api/mcp/";

/// Request headers that cross to the MCP server.
fn crosses_to_server(name: &HeaderName) -> bool {
    let name = name.as_str();
    matches!(name, "accept" | "content-type" | "last-event-id") || name.starts_with("mcp-")
}

/// Answer headers that cross back to the browser.
fn crosses_to_browser(name: &HeaderName) -> bool {
    let name = name.as_str();
    matches!(name, "content-type" | "retry-after") || name.starts_with("mcp-")
}

pub async fn relay(
    State(state): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mcp = &state.mcp;
    let name = uri.path().strip_prefix(PREFIX).unwrap_or_default();
    let Some(server) = mcp.get(name) else {
        let shown: String = name.chars().take(64).collect();
        return ProxyError::new(
            StatusCode::NOT_FOUND,
            "mcp_server_not_found",
            format!("no MCP server named {shown:?} is configured on the proxy (ATELIER_MCP_SERVERS)"),
        )
        .into_response();
    };
    if uri.query().is_some() {
        return ProxyError::bad_request(
            "the MCP relay takes no query string: the server's URL is configured on the proxy",
        )
        .into_response();
    }
    if !matches!(method, Method::POST | Method::GET | Method::DELETE) {
        let mut response = ProxyError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "the MCP relay takes POST, GET and DELETE",
        )
        .into_response();
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
        return response;
    }
    let started = Instant::now();
    let outcome = forward(mcp, server, &method, &headers, body).await;
    let mut response = match outcome {
        Ok(response) => response,
        Err(err) => err.into_response(),
    };
    response.extensions_mut().insert(UpstreamLatency(started.elapsed()));
    response
}

async fn forward(
    mcp: &McpServers,
    server: &McpServer,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ProxyError> {
    let name = &server.config.name;
    let mut call = mcp.http.request(method.clone(), server.config.url.clone());
    for (key, value) in headers.iter().filter(|(key, _)| crosses_to_server(key)) {
        call = call.header(key, value);
    }
    if let Some(token) = &server.config.token {
        call = call.bearer_auth(token);
    }
    if method == Method::POST {
        call = call.body(body);
    }
    let answer = match tokio::time::timeout(mcp.answer_timeout, call.send()).await {
        Err(_) => {
            server.reach.record(Reach::Fails("timeout"));
            return Err(ProxyError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "mcp_timeout",
                format!("the MCP server {name} did not answer within {} s", mcp.answer_timeout.as_secs()),
            ));
        }
        Ok(Err(e)) => {
            server.reach.record(Reach::of_error(&e));
            let detail = mcp.redactor.error(e);
            return Err(ProxyError::new(
                StatusCode::BAD_GATEWAY,
                "mcp_unreachable",
                format!("cannot reach the MCP server {name}: {detail}"),
            ));
        }
        Ok(Ok(answer)) => answer,
    };
    let status = answer.status();
    if let Some(reach) = Reach::of_status(status, false) {
        server.reach.record(reach);
    }
    if status.is_redirection() {
        return Err(upstream_refusal(
            "mcp_redirect",
            status,
            format!("the MCP server {name} answered a redirect ({status}); the relay never follows one"),
        ));
    }
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Err(upstream_refusal(
            "mcp_auth",
            status,
            format!(
                "the MCP server {name} refused the proxy's credentials ({status}); check {}",
                super::config::token_variable(name)
            ),
        ));
    }

    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    let out = response.headers_mut();
    for (key, value) in answer.headers().iter().filter(|(key, _)| crosses_to_browser(key)) {
        let value = value.to_str().map(|v| mcp.redactor.text(v)).ok().and_then(|v| HeaderValue::from_str(&v).ok());
        if let Some(value) = value {
            out.append(key, value);
        }
    }
    let is_stream = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    // The streams that carry a session's notifications may stay quiet for
    // long: the GET stream (up to protocol 2025-11-25) and the answer to
    // `subscriptions/listen` (2026-07-28, which names its method in a header).
    let long_lived =
        method == Method::GET || headers.get("mcp-method").is_some_and(|m| m.as_bytes() == b"subscriptions/listen");
    let pace = match (is_stream, long_lived) {
        (true, true) => Pace::Events(mcp.stream_idle),
        (true, false) => Pace::Events(mcp.answer_timeout),
        (false, _) => Pace::Body(mcp.answer_timeout),
    };
    if is_stream {
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        out.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    *response.body_mut() = Body::from_stream(relayed(answer.bytes_stream(), mcp.redactor.clone(), pace));
    Ok(response)
}

/// An answer of the MCP server that the relay does not pass on (its body and
/// headers may point elsewhere or carry what the browser must not see).
fn upstream_refusal(kind: &'static str, status: StatusCode, message: String) -> ProxyError {
    let mut err = ProxyError::new(StatusCode::BAD_GATEWAY, kind, message);
    err.upstream_status = Some(status.as_u16());
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_headers_cross() {
        let to_server = [
            "accept",
            "content-type",
            "last-event-id",
            "mcp-session-id",
            "mcp-protocol-version",
            "mcp-method",
            "mcp-param-region",
        ];
        let kept_home = [
            "authorization",
            "cookie",
            "origin",
            "referer",
            "host",
            "x-forwarded-for",
            "user-agent",
            "proxy-authorization",
        ];
        for name in to_server {
            assert!(crosses_to_server(&HeaderName::from_static(name)), "{name}");
        }
        for name in kept_home {
            assert!(!crosses_to_server(&HeaderName::from_static(name)), "{name}");
        }
        for name in ["set-cookie", "www-authenticate", "location", "access-control-allow-origin", "server"] {
            assert!(!crosses_to_browser(&HeaderName::from_static(name)), "{name}");
        }
        for name in ["content-type", "mcp-session-id", "mcp-protocol-version", "retry-after"] {
            assert!(crosses_to_browser(&HeaderName::from_static(name)), "{name}");
        }
    }
}
