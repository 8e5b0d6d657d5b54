//! One structured line per request on stderr: method, path (never the query),
//! status, latency, and the upstream's latency when there was one. Never
//! bodies, headers or keys.

use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

/// Time an upstream took to answer (to its response headers), attached to
/// responses by the handlers that call one.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamLatency(pub Duration);

pub async fn requests(request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
    let upstream = response.extensions().get::<UpstreamLatency>().map(|u| ms(u.0));
    let line = json!({
        "method": method,
        "path": path,
        "status": response.status().as_u16(),
        "ms": ms(started.elapsed()),
        "upstream_ms": upstream,
    });
    eprintln!("{line}");
    response
}
