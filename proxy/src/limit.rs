//! Exposure controls for /api and /v1: the optional client bearer token and a
//! per-client-IP rate limit (a token bucket refilled continuously).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::state::AppState;

/// Requests per minute per client IP.
pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(per_minute: u32) -> RateLimiter {
        RateLimiter { per_minute, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token for `ip`; `Err(seconds)` until the next one when empty.
    fn take(&self, ip: IpAddr) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > 10_000 {
            // Forget idle clients (full buckets) so the map stays small.
            buckets.retain(|_, (tokens, at)| *tokens + at.elapsed().as_secs_f64() * per_second < capacity);
        }
        let (tokens, at) = buckets.entry(ip).or_insert((capacity, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * per_second).min(capacity);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / per_second).ceil() as u64)
        }
    }
}

/// Compares the token a client sent with the configured one. The work
/// depends only on the length of what was sent: neither the token's bytes
/// nor its length show in the timing.
fn token_matches(sent: &[u8], token: &[u8]) -> bool {
    if token.is_empty() {
        return false;
    }
    let mut diff = u8::from(sent.len() != token.len());
    for (i, byte) in sent.iter().enumerate() {
        diff |= byte ^ token[i % token.len()];
    }
    diff == 0
}

/// Checks the client token (when configured) and the rate limit; a failed
/// token check counts against the limit too, so a token cannot be guessed
/// faster than the limit allows.
pub async fn guard(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == axum::http::Method::OPTIONS {
        return next.run(request).await;
    }
    let allowed = state.limiter.take(peer.ip());
    if let Some(token) = state.client_token.as_deref() {
        let sent = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !token_matches(sent.as_bytes(), token.as_bytes()) && allowed.is_ok() {
            return ProxyError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this proxy requires `Authorization: Bearer <client token>`",
            )
            .into_response();
        }
    }
    if let Err(wait) = allowed {
        let mut err = ProxyError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests from this client; retry later",
        );
        err.retry_after = HeaderValue::from_str(&wait.max(1).to_string()).ok();
        return err.into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(token_matches(b"secret-token", b"secret-token"));
        for wrong in [&b""[..], b"secret-toke", b"secret-token!", b"secret-tokeN", b"secret-tokensecret-token"] {
            assert!(!token_matches(wrong, b"secret-token"), "{wrong:?}");
        }
        assert!(!token_matches(b"", b""));
    }

    #[test]
    fn every_request_takes_from_the_bucket() {
        let limiter = RateLimiter::new(2);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(limiter.take(ip).is_ok() && limiter.take(ip).is_ok());
        assert!(limiter.take(ip).is_err());
    }
}
