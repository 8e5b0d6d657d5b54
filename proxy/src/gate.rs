//! Who may use the proxy: only the person's own app.
//!
//! The proxy spends the person's API key, and every web site their browser
//! visits can send requests to `127.0.0.1`. Three checks run before anything
//! is forwarded:
//!
//! * **Host** (every request): the `Host` header must name the proxy itself
//!   (its bind address, or `localhost`/`127.0.0.1`/`[::1]` with its port when
//!   bound to loopback) or a host in `ATELIER_ALLOWED_HOSTS`. A page reached
//!   by DNS rebinding carries its own name here and gets 421.
//! * **Origin** (`/api/*`, `/v1/*`): a request with an `Origin` is served only
//!   for the proxy's own origin (the app it serves) or one listed in
//!   `ATELIER_ALLOWED_ORIGINS`; a browser request without one that says it is
//!   cross-site (`Sec-Fetch-Site`) is refused too. Preflights included: 403.
//! * **Content type** (`POST /api/*`, `/v1/*`): only `application/json` (415
//!   otherwise), so no cross-site "simple request" (`text/plain`, forms) can
//!   reach the upstream even where a browser sends no `Origin`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::state::AppState;

/// The hosts and origins the proxy answers.
#[derive(Debug, Clone)]
pub struct Gate {
    /// `host[:port]` values the `Host` header may carry (lower case).
    hosts: Vec<String>,
    /// Hosts allowed on any port (from `ATELIER_ALLOWED_HOSTS` entries without a port).
    any_port_hosts: Vec<String>,
    any_host: bool,
    origins: Vec<String>,
    any_origin: bool,
}

impl Gate {
    /// The gate for a proxy listening on `bound`, with the configured extra
    /// hosts and origins (`*` turns a check off).
    pub fn new(bound: SocketAddr, allowed_hosts: &[String], allowed_origins: &[String]) -> Gate {
        let port = bound.port();
        let mut names: Vec<String> = vec![host_literal(bound.ip())];
        if bound.ip().is_loopback() || bound.ip().is_unspecified() {
            names.extend(["localhost".to_owned(), "127.0.0.1".to_owned(), "[::1]".to_owned()]);
        }
        let mut hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
        if port == 80 {
            hosts.extend(names);
        }
        let mut any_port_hosts = Vec::new();
        let mut any_host = false;
        for entry in allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()) {
            if entry == "*" {
                any_host = true;
            } else if has_port(&entry) {
                hosts.push(entry);
            } else {
                any_port_hosts.push(entry);
            }
        }
        let origins: Vec<String> = allowed_origins
            .iter()
            .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
            .filter(|o| !o.is_empty())
            .collect();
        let any_origin = origins.iter().any(|o| o == "*");
        Gate { hosts, any_port_hosts, any_host, origins, any_origin }
    }

    /// Whether a `Host` header value names this proxy.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        if self.any_host || self.hosts.contains(&host) {
            return true;
        }
        let name = strip_port(&host);
        self.any_port_hosts.iter().any(|h| h == name)
    }

    /// Whether a request with these headers (and this `Host`) comes from an
    /// origin that may use the API.
    pub fn origin_allowed(&self, headers: &HeaderMap, host: &str) -> bool {
        match headers.get(header::ORIGIN).map(|o| o.to_str().unwrap_or("").trim().to_ascii_lowercase()) {
            Some(origin) => {
                let same = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    .is_some_and(|authority| authority == host.trim().to_ascii_lowercase());
                same || self.any_origin || self.origins.contains(&origin)
            }
            // No Origin: a non-browser client, or a browser's same-origin
            // navigation. A browser that says the request is cross-site is
            // refused all the same.
            None => {
                !matches!(headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()), Some("cross-site" | "same-site"))
            }
        }
    }
}

fn host_literal(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn has_port(host: &str) -> bool {
    strip_port(host) != host
}

/// `host` without a trailing `:port` (IPv6 literals keep their brackets).
fn strip_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(at) if !host[at..].contains(']') && host[at + 1..].bytes().all(|b| b.is_ascii_digit()) => &host[..at],
        _ => host,
    }
}

fn is_api(path: &str) -> bool {
    path.starts_with("/api/") || path.starts_with("/v1/")
}

/// The middleware: Host on every request; Origin and content type on the API.
pub async fn check(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("").to_owned();
    if !state.gate.host_allowed(&host) {
        return ProxyError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
            format!(
                "this proxy does not answer for the host {host:?}; open it at its own address, or add the host to \
                 ATELIER_ALLOWED_HOSTS"
            ),
        )
        .into_response();
    }
    let path = request.uri().path();
    if is_api(path) {
        if !state.gate.origin_allowed(headers, &host) {
            return ProxyError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "this origin may not use the proxy; add it to ATELIER_ALLOWED_ORIGINS to allow it",
            )
            .into_response();
        }
        if request.method() == Method::POST && !is_json(headers) {
            return ProxyError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the API takes `Content-Type: application/json` only",
            )
            .into_response();
        }
    }
    next.run(request).await
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn gate(bind: &str, hosts: &[&str], origins: &[&str]) -> Gate {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Gate::new(bind.parse().unwrap(), &owned(hosts), &owned(origins))
    }

    #[test]
    fn loopback_names_with_the_port_are_the_proxy() {
        let g = gate("127.0.0.1:8787", &[], &[]);
        for ok in ["127.0.0.1:8787", "localhost:8787", "LOCALHOST:8787", "[::1]:8787"] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in ["", "127.0.0.1", "localhost:8788", "rebind.attacker.example:8787", "127.0.0.1.nip.io:8787", "[::1]"]
        {
            assert!(!g.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn configured_hosts_with_or_without_a_port() {
        let g = gate("0.0.0.0:8787", &["app.example.com", "lan.box:9000"], &[]);
        assert!(g.host_allowed("app.example.com") && g.host_allowed("app.example.com:443"));
        assert!(g.host_allowed("lan.box:9000") && !g.host_allowed("lan.box:9001"));
        assert!(g.host_allowed("localhost:8787") && !g.host_allowed("evil.example"));
        assert!(gate("127.0.0.1:80", &[], &[]).host_allowed("localhost"));
        assert!(gate("127.0.0.1:1", &["*"], &[]).host_allowed("anything"));
    }

    #[test]
    fn origins_same_origin_listed_or_refused() {
        let g = gate("127.0.0.1:8787", &[], &["http://localhost:5173"]);
        let with = |origin: Option<&str>, site: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(o) = origin {
                h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            }
            if let Some(s) = site {
                h.insert("sec-fetch-site", HeaderValue::from_str(s).unwrap());
            }
            g.origin_allowed(&h, "127.0.0.1:8787")
        };
        assert!(with(Some("http://127.0.0.1:8787"), None));
        assert!(with(Some("http://localhost:5173"), Some("cross-site")));
        assert!(with(None, None) && with(None, Some("same-origin")) && with(None, Some("none")));
        assert!(!with(Some("https://evil.example"), None));
        assert!(!with(Some("null"), None));
        assert!(!with(Some("http://127.0.0.1:8787.evil.example"), None));
        assert!(!with(None, Some("cross-site")));
    }
}
